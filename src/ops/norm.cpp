// batch_norm2d: a quantized BatchNorm2d (float32 gamma, beta, mean and variance
// params), with the fused relu of BNReLU2d as the int "relu".
// quantized_layer_norm / quantized_group_norm: PyTorch's quantized LayerNorm and
// GroupNorm (InstanceNorm is a group norm with one group per channel), with float32
// "norm_weight" and "norm_bias" params. float_batch_norm / float_group_norm: the same params on
// float32 tensors (runners: runtime/ops/float_spatial.cpp).
#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/float_spatial_runners.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

constexpr const char* kRoles[] = {"bn_weight", "bn_bias", "bn_running_mean", "bn_running_var"};

// The per-channel params of batch_norm2d and float_batch_norm, and eps; the output shape.
Shape batch_norm_shape(const Checker& c) {
  const Value& x = c.in(0);
  for (const char* role : kRoles) {
    const Param& p = c.param(role);
    if (p.dtype != DType::Float32 || p.shape != Shape{x.shape[1]}) {
      c.fail(std::string(role) + " must be float32 " + shape_str({x.shape[1]}) + " (one per channel), got " +
             dtype_name(p.dtype) + " " + shape_str(p.shape));
    }
  }
  if (!(c.n.float_attr("eps") >= 0.0)) c.fail("eps must be >= 0");
  return x.shape;
}

Shape batch_norm2d_rule(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  c.rank(c.in(0), 4);
  c.n.int_attr("relu");
  return batch_norm_shape(c);
}

// float_batch_norm: (N, C, *spatial) float32 in eval mode (running statistics).
Shape float_batch_norm_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  c.dtype(c.in(0), DType::Float32);
  c.dtype(out, DType::Float32);
  if (c.in(0).shape.size() < 2) c.fail("input must be (N, C, ...), has shape " + shape_str(c.in(0).shape));
  return batch_norm_shape(c);
}

// R.nn.batch_norm's normalized output, in eval mode.
std::string batch_norm_expr(Emitter& e, const Node& n, const std::string& x) {
  std::string args;
  for (const char* role : kRoles) args += ", " + e.graph().node_param(n, role).name;
  return e.emit(e.out_name(n) + "_bn", "R.nn.batch_norm(" + x + args + ", axis=1, epsilon=" + float_literal(n.float_attr("eps")) +
                                           ", training=False)") + "[0]";
}

void float_batch_norm_emit(Emitter& e, const Node& n) { e.line(e.out_name(n), batch_norm_expr(e, n, e.in_name(n, 0))); }

void batch_norm2d_emit(Emitter& e, const Node& n) {
  const std::string x = e.input(n, 0, "x");
  e.quantize_output(n, e.bias_and_relu(n, e.emit(e.out_name(n) + "_norm", batch_norm_expr(e, n, x)), 4));
}

// The float32 weight and bias of a normalization, both of shape `shape`.
void check_affine_params(const Checker& c, const Shape& shape, const std::string& what) {
  for (const char* role : {"norm_weight", "norm_bias"}) {
    const Param& p = c.param(role);
    if (p.dtype != DType::Float32 || p.shape != shape) {
      c.fail(std::string(role) + " must be float32 " + shape_str(shape) + " (" + what + "), got " + dtype_name(p.dtype) +
             " " + shape_str(p.shape));
    }
  }
  if (!(c.n.float_attr("eps") > 0.0)) c.fail("eps must be > 0, got " + std::to_string(c.n.float_attr("eps")));
}

// "normalized_rank" k: the last k axes are normalized together (LayerNorm's normalized_shape).
Shape layer_norm_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized_per_tensor(x);
  const int64_t k = c.n.int_attr("normalized_rank");
  if (k < 1 || k > static_cast<int64_t>(x.shape.size())) {
    c.fail("normalized_rank must be in [1, " + std::to_string(x.shape.size()) + "] for input shape " +
           shape_str(x.shape) + ", got " + std::to_string(k));
  }
  check_affine_params(c, Shape(x.shape.end() - k, x.shape.end()), "the normalized shape");
  return x.shape;
}

// (N, C, *spatial) normalized in "num_groups" groups of C / num_groups channels.
Shape group_norm_shape(const Checker& c) {
  c.inputs(1);
  const Value& x = c.in(0);
  if (x.shape.size() < 3) c.fail("input must be (N, C, *spatial) with at least one spatial axis, has shape " + shape_str(x.shape));
  const int64_t groups = c.n.int_attr("num_groups");
  if (groups < 1 || x.shape[1] % groups != 0) {
    c.fail("num_groups must divide the " + std::to_string(x.shape[1]) + " channels, got " + std::to_string(groups));
  }
  check_affine_params(c, Shape{x.shape[1]}, "one per channel");
  return x.shape;
}

Shape group_norm_rule(const Checker& c, const Value&) {
  c.quantized_per_tensor(c.in(0));
  return group_norm_shape(c);
}

Shape float_group_norm_rule(const Checker& c, const Value& out) {
  c.dtype(c.in(0), DType::Float32);
  c.dtype(out, DType::Float32);
  return group_norm_shape(c);
}

std::string affine_args(Emitter& e, const Node& n) {
  return e.graph().node_param(n, "norm_weight").name + ", " + e.graph().node_param(n, "norm_bias").name;
}

void layer_norm_emit(Emitter& e, const Node& n) {
  const std::string x = e.input(n, 0, "x");
  std::vector<int64_t> axes;
  for (int64_t k = n.int_attr("normalized_rank"); k > 0; --k) axes.push_back(-k);
  e.quantize_output(n, e.emit(e.out_name(n) + "_norm", "R.nn.layer_norm(" + x + ", " + affine_args(e, n) + ", axes=" +
                                                          int_list(axes) + ", epsilon=" + float_literal(n.float_attr("eps")) + ")"));
}

std::string group_norm_expr(Emitter& e, const Node& n, const std::string& x) {
  std::vector<int64_t> axes;
  for (size_t d = 2; d < e.graph().value(n.inputs[0]).shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  return "R.nn.group_norm(" + x + ", " + affine_args(e, n) + ", num_groups=" + std::to_string(n.int_attr("num_groups")) +
         ", channel_axis=1, axes=" + int_list(axes) + ", epsilon=" + float_literal(n.float_attr("eps")) + ")";
}

void group_norm_emit(Emitter& e, const Node& n) {
  const std::string x = e.input(n, 0, "x");
  e.quantize_output(n, e.emit(e.out_name(n) + "_norm", group_norm_expr(e, n, x)));
}

void float_group_norm_emit(Emitter& e, const Node& n) { e.line(e.out_name(n), group_norm_expr(e, n, e.in_name(n, 0))); }

}  // namespace

std::vector<OpDef> norm_ops() {
  return {
      {"batch_norm2d", OpKind::Requantizing, batch_norm2d_rule, batch_norm2d_emit, function_runner<run_batch_norm2d>},
      {"quantized_layer_norm", OpKind::Requantizing, layer_norm_rule, layer_norm_emit, function_runner<run_quantized_layer_norm>},
      {"quantized_group_norm", OpKind::Requantizing, group_norm_rule, group_norm_emit, function_runner<run_quantized_group_norm>},
      {"float_batch_norm", OpKind::Float, float_batch_norm_rule, float_batch_norm_emit, function_runner<run_float_batch_norm>},
      {"float_group_norm", OpKind::Float, float_group_norm_rule, float_group_norm_emit, function_runner<run_float_group_norm>},
  };
}

}  // namespace qnnpy
