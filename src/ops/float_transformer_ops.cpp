// Float ops of transformer encoders: the parts a quantizer leaves in float around attention
// (PT2E float islands) and everything but the linears of a dynamic-quantized encoder (with the
// element-wise, movement and reduction float ops of their own files).
// float32 in and out, no qparams; emitted as float Relax ops and run in float32 by the
// runtime (src/runtime/ops/float_transformer_ops.cpp).
//
// float_softmax        "axis"                             R.nn.softmax
// float_layer_norm     "normalized_rank", "eps";          R.nn.layer_norm over the last
//                      params "norm_weight", "norm_bias"  normalized_rank axes
// float_gelu           "approximate": 0 erf, 1 tanh       R.nn.gelu / R.nn.gelu_tanh
// float_matmul         two inputs of rank >= 2, batch     R.matmul
//                      axes broadcast (torch.matmul)
#include <algorithm>
#include <string>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/float_transformer_runners.h"

namespace qnnpy {
namespace {

Shape float_softmax_rule(const Checker& c, const Value&) {
  c.inputs(1);
  if (c.in(0).shape.empty()) c.fail("input must have at least one axis");
  c.axis("axis", c.in(0).shape.size());
  return c.in(0).shape;
}

Shape float_layer_norm_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Shape& x = c.in(0).shape;
  const int64_t k = c.n.int_attr("normalized_rank");
  if (k < 1 || k > static_cast<int64_t>(x.size())) {
    c.fail("normalized_rank must be in [1, " + std::to_string(x.size()) + "] for input shape " + shape_str(x) + ", got " +
           std::to_string(k));
  }
  const Shape normalized(x.end() - k, x.end());
  for (const char* role : {"norm_weight", "norm_bias"}) {
    const Param& p = c.param(role);
    if (p.dtype != DType::Float32 || p.shape != normalized) {
      c.fail(std::string(role) + " must be float32 " + shape_str(normalized) + " (the normalized shape), got " +
             dtype_name(p.dtype) + " " + shape_str(p.shape));
    }
  }
  if (!(c.n.float_attr("eps") > 0.0)) c.fail("eps must be > 0, got " + std::to_string(c.n.float_attr("eps")));
  return x;
}

Shape gelu_rule(const Checker& c, const Value& out) {
  const int64_t approximate = c.n.int_attr("approximate");
  if (approximate != 0 && approximate != 1) c.fail("approximate must be 0 (erf) or 1 (tanh), got " + std::to_string(approximate));
  return float_unary_rule(c, out);
}

// [..., M, K] x [..., K, N] -> [broadcast(...), M, N]; 1-D operands (torch.matmul's vector cases) are refused.
Shape matmul_rule(const Checker& c, const Value&) {
  c.inputs(2);
  const Shape &a = c.in(0).shape, &b = c.in(1).shape;
  if (a.size() < 2 || b.size() < 2) {
    c.fail("both inputs must have rank >= 2 (matrix or batch of matrices), got " + shape_str(a) + " and " + shape_str(b));
  }
  if (a.back() != b[b.size() - 2]) c.fail("inner dimensions of " + shape_str(a) + " and " + shape_str(b) + " differ");
  Shape out = c.broadcast(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  out.push_back(a[a.size() - 2]);
  out.push_back(b.back());
  return out;
}

// --- emission -------------------------------------------------------------------

void float_softmax_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.nn.softmax(" + e.in_name(n, 0) + ", axis=" + std::to_string(n.int_attr("axis")) + ")");
}

void float_layer_norm_emit(Emitter& e, const Node& n) {
  std::vector<int64_t> axes;
  for (int64_t k = n.int_attr("normalized_rank"); k > 0; --k) axes.push_back(-k);
  const Graph& g = e.graph();
  e.line(e.out_name(n), "R.nn.layer_norm(" + e.in_name(n, 0) + ", " + g.node_param(n, "norm_weight").name + ", " +
                            g.node_param(n, "norm_bias").name + ", axes=" + int_list(axes) +
                            ", epsilon=" + float_literal(n.float_attr("eps")) + ")");
}

void gelu_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), std::string(n.int_attr("approximate") ? "R.nn.gelu_tanh(" : "R.nn.gelu(") + e.in_name(n, 0) + ")");
}

void matmul_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.matmul(" + e.in_name(n, 0) + ", " + e.in_name(n, 1) + ")");
}

}  // namespace

std::vector<OpDef> float_transformer_ops() {
  return {
      {"float_softmax", OpKind::Float, float_softmax_rule, float_softmax_emit, function_runner<run_float_softmax>},
      {"float_layer_norm", OpKind::Float, float_layer_norm_rule, float_layer_norm_emit, function_runner<run_float_layer_norm>},
      {"float_gelu", OpKind::Float, gelu_rule, gelu_emit, function_runner<run_float_gelu>},
      {"float_matmul", OpKind::Float, matmul_rule, matmul_emit, function_runner<run_float_matmul>},
  };
}

}  // namespace qnnpy
