// float_attention: scaled dot-product attention (torch.nn.functional.scaled_dot_product_attention) in float32,
// one op where PyTorch's decomposition spells five (a transpose of the keys, two scalings, two matmuls around the
// softmax): the keys are read in place, and grouped-query attention reads each key / value head for its group of
// query heads instead of a copy repeated per head.
//
// inputs   q (N, Hq, L, E), k (N, Hk, S, E), v (N, Hk, S, Ev), optionally a mask broadcasting to (N, Hq, L, S):
//          bool (False: the position is left out) or float32 (added to the scores); Hq a multiple of Hk (query
//          head h reads key / value head h / (Hq / Hk), as SDPA's enable_gqa and transformers' repeat_kv)
// output   (N, Hq, L, Ev)
// "scale" the factor of the scores; "causal" 1: position s is left out of row l where s > l (SDPA's is_causal,
//          the top-left aligned lower triangle)
// Relax: the same steps, each a Relax op (R.repeat for the groups, R.matmul, R.where / R.add for the masks,
//          R.nn.softmax, zeros for a row left out entirely); the runtime's arithmetic: runtime/ops/float_attention.cpp.
#include <cmath>
#include <string>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/float_transformer_runners.h"

namespace qnnpy {
namespace {

Shape attention_rule(const Checker& c, const Value& out) {
  if (c.n.inputs.size() != 3 && c.n.inputs.size() != 4) {
    c.fail("expects 3 inputs (query, key, value) or 4 (and a mask), got " + std::to_string(c.n.inputs.size()));
  }
  for (size_t i = 0; i < 3; ++i) {
    c.dtype(c.in(i), DType::Float32);
    c.rank(c.in(i), 4);
  }
  const Shape &q = c.in(0).shape, &k = c.in(1).shape, &v = c.in(2).shape;
  if (k[0] != q[0] || v[0] != q[0] || v[1] != k[1] || v[2] != k[2] || k[3] != q[3]) {
    c.fail("query " + shape_str(q) + ", key " + shape_str(k) + " and value " + shape_str(v) +
           " do not fit (N, Hq, L, E), (N, Hk, S, E), (N, Hk, S, Ev)");
  }
  if (q[1] % k[1] != 0) {
    c.fail(std::to_string(q[1]) + " query heads are not a multiple of " + std::to_string(k[1]) + " key heads");
  }
  const Shape scores{q[0], q[1], q[2], k[2]};
  if (c.n.inputs.size() == 4) {
    const Value& mask = c.in(3);
    if (mask.dtype != DType::Float32 && mask.dtype != DType::Bool) {
      c.fail(std::string("the mask must be bool or float32, got ") + dtype_name(mask.dtype));
    }
    if (mask.shape.size() > 4 || c.broadcast(mask.shape, scores) != scores) {
      c.fail("the mask " + shape_str(mask.shape) + " does not broadcast to the scores " + shape_str(scores));
    }
  }
  const int64_t causal = c.n.int_attr("causal");
  if (causal != 0 && causal != 1) c.fail("causal must be 0 or 1, got " + std::to_string(causal));
  c.n.float_attr("scale");
  c.dtype(out, DType::Float32);
  return {q[0], q[1], q[2], v[3]};
}

void attention_emit(Emitter& e, const Node& n) {
  const Graph& g = e.graph();
  const std::string o = e.out_name(n);
  const Shape &q = g.value(n.inputs[0]).shape, &k = g.value(n.inputs[1]).shape;
  const int64_t groups = q[1] / k[1];
  std::string key = e.in_name(n, 1), value = e.in_name(n, 2);
  if (groups > 1) {
    key = e.emit(o + "_key", "R.repeat(" + key + ", " + std::to_string(groups) + ", axis=1)");
    value = e.emit(o + "_value", "R.repeat(" + value + ", " + std::to_string(groups) + ", axis=1)");
  }
  std::string scores = e.emit(o + "_scores", "R.multiply(R.matmul(" + e.in_name(n, 0) + ", R.permute_dims(" + key +
                                                 ", axes=[0, 1, 3, 2])), " + scalar_const(n.float_attr("scale"), DType::Float32) + ")");
  const std::string minus_inf = scalar_const(-INFINITY, DType::Float32);
  if (n.inputs.size() == 4) {
    const std::string mask = e.in_name(n, 3);
    scores = g.value(n.inputs[3]).dtype == DType::Bool
                 ? e.emit(o + "_masked", "R.where(" + mask + ", " + scores + ", " + minus_inf + ")")
                 : e.emit(o + "_masked", "R.add(" + scores + ", " + mask + ")");
  }
  if (n.int_attr("causal")) {
    const std::string rows = e.emit(o + "_rows", "R.reshape(R.arange(" + std::to_string(q[2]) + ", dtype=\"int64\"), R.shape([" +
                                                     std::to_string(q[2]) + ", 1]))");
    const std::string cols = e.emit(o + "_cols", "R.arange(" + std::to_string(k[2]) + ", dtype=\"int64\")");
    scores = e.emit(o + "_causal", "R.where(R.less_equal(" + cols + ", " + rows + "), " + scores + ", " + minus_inf + ")");
  }
  // PyTorch's _safe_softmax: a row whose every score is -inf gives zeros, not NaN.
  // (Every score -inf, counted in int32: TVM's max starts its reduction from the lowest finite float, not -inf.)
  const std::string empty = e.emit(o + "_empty", "R.equal(R.min(R.astype(R.equal(" + scores + ", " + minus_inf +
                                                     "), \"int32\"), axis=-1, keepdims=True), R.const(1, \"int32\"))");
  const std::string weights = e.emit(o + "_weights", "R.where(" + empty + ", " + scalar_const(0.0, DType::Float32) +
                                                         ", R.nn.softmax(" + scores + ", axis=-1))");
  e.line(o, "R.matmul(" + weights + ", " + value + ")");
}

}  // namespace

std::vector<OpDef> float_attention_ops() {
  return {
      {"float_attention", OpKind::Float, attention_rule, attention_emit, function_runner<run_float_attention>, nullptr,
       /*bit_exact_float_output=*/false, /*reads_quantized_source=*/false, /*any_dtype=*/true},
  };
}

}  // namespace qnnpy
