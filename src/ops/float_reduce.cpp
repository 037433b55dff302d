// Float reductions (runners: src/runtime/ops/float_reduce.cpp).
//
// float_sum, float_prod     "axes" (empty: all), "keepdim"; float32 -> float32, integers and
//                           bool -> int64 (PyTorch's promotion)
// float_mean                the same, float32 only
// float_amax, float_amin    the same, the input's dtype
// float_var                 the same and float "correction" (0 population, 1 sample), float32
// float_any                 the same, any dtype -> bool
// float_argmax, float_argmin  "axis" (one entry, or none for the flattened input), "keepdim";
//                           float32 or integers -> int64; the first of equal extremes
// float_cumsum              "axis"; float32 -> float32, integers and bool -> int64
// float_log_softmax         "axis"; float32
#include <algorithm>
#include <string>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/float_reduce_runners.h"

namespace qnnpy {
namespace {

// The output shape of a reduction over `axes` (all axes when empty).
Shape reduced_shape(const Shape& x, const std::vector<int64_t>& axes, bool keepdim) {
  Shape s;
  for (size_t d = 0; d < x.size(); ++d) {
    const bool reduced = axes.empty() || std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (!reduced) s.push_back(x[d]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

bool keepdim(const Checker& c) {
  const int64_t k = c.n.int_attr("keepdim");
  if (k != 0 && k != 1) c.fail("keepdim must be 0 or 1, got " + std::to_string(k));
  return k == 1;
}

// The dtype of a sum: float32 stays, integers and bool widen to int64.
DType accumulated(DType t) { return t == DType::Float32 ? DType::Float32 : DType::Int64; }

Shape reduce_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  const Value& x = c.in(0);
  const std::string& op = c.n.op;
  if (op == "float_mean" || op == "float_var") {
    c.dtype(x, DType::Float32);
    c.dtype(out, DType::Float32);
  } else if (op == "float_any") {
    c.dtype(out, DType::Bool);
  } else if (op == "float_amax" || op == "float_amin") {
    c.dtype(out, x.dtype);
  } else {
    c.dtype(out, accumulated(x.dtype));
  }
  if (op == "float_var") c.n.float_attr("correction");
  return reduced_shape(x.shape, c.axes("axes", x.shape.size()), keepdim(c));
}

Shape arg_reduce_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  c.numeric(c.in(0));
  c.dtype(out, DType::Int64);
  const std::vector<int64_t> axis = c.axes("axis", c.in(0).shape.size());
  if (axis.size() > 1) c.fail("axis holds at most one axis");
  if (axis.empty() && keepdim(c)) return Shape(c.in(0).shape.size(), 1);
  return reduced_shape(c.in(0).shape, axis, keepdim(c));
}

Shape cumsum_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  c.dtype(out, accumulated(c.in(0).dtype));
  if (c.in(0).shape.empty()) c.fail("input must have at least one axis");
  c.axis("axis", c.in(0).shape.size());
  return c.in(0).shape;
}

Shape log_softmax_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  c.dtype(c.in(0), DType::Float32);
  c.dtype(out, DType::Float32);
  if (c.in(0).shape.empty()) c.fail("input must have at least one axis");
  c.axis("axis", c.in(0).shape.size());
  return c.in(0).shape;
}

// --- emission -------------------------------------------------------------------

std::string axes_arg(const Node& n) {
  const auto& axes = n.ints_attr("axes");
  return (axes.empty() ? std::string("axis=None") : "axis=" + int_list(axes)) +
         ", keepdims=" + (n.int_attr("keepdim") ? "True" : "False");
}

void reduce_emit(Emitter& e, const Node& n) {
  const Graph& g = e.graph();
  const Value& out = g.value(n.output);
  std::string x = e.in_name(n, 0);
  if (g.value(n.inputs[0]).dtype != out.dtype && n.op != "float_any") x = "R.astype(" + x + ", \"" + dtype_name(out.dtype) + "\")";
  std::string y;
  if (n.op == "float_sum") y = "R.sum(" + x + ", " + axes_arg(n) + ")";
  if (n.op == "float_prod") y = "R.prod(" + x + ", " + axes_arg(n) + ")";
  if (n.op == "float_mean") y = "R.mean(" + x + ", " + axes_arg(n) + ")";
  if (n.op == "float_amax") y = "R.max(" + x + ", " + axes_arg(n) + ")";
  if (n.op == "float_amin") y = "R.min(" + x + ", " + axes_arg(n) + ")";
  if (n.op == "float_any") {
    y = "R.greater(R.sum(R.astype(R.astype(" + x + ", \"bool\"), \"int64\"), " + axes_arg(n) + "), R.const(0, \"int64\"))";
  }
  if (n.op == "float_var") {
    // Relax's variance is the population variance: times count / (count - correction).
    const Shape& shape = g.value(n.inputs[0]).shape;
    int64_t count = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      const auto& axes = n.ints_attr("axes");
      const bool reduced = axes.empty() || std::count(axes.begin(), axes.end(), static_cast<int64_t>(d)) ||
                           std::count(axes.begin(), axes.end(), static_cast<int64_t>(d) - static_cast<int64_t>(shape.size()));
      if (reduced) count *= shape[d];
    }
    const double correction = n.float_attr("correction");
    y = "R.multiply(R.variance(" + x + ", " + axes_arg(n) + "), " +
        float_const(static_cast<float>(count / (count - correction))) + ")";
  }
  e.line(out.name, y);
}

void arg_reduce_emit(Emitter& e, const Node& n) {
  const auto& axis = n.ints_attr("axis");
  const std::string f = n.op == "float_argmax" ? "R.argmax(" : "R.argmin(";
  const std::string keep = n.int_attr("keepdim") ? "True" : "False";
  std::string y = f + e.in_name(n, 0) + ", axis=" + (axis.empty() ? "None" : std::to_string(axis[0])) + ", keepdims=" + keep + ")";
  if (axis.empty() && n.int_attr("keepdim")) y = "R.reshape(" + y + ", " + e.value_shape_expr(n.output) + ")";
  e.line(e.out_name(n), y);
}

void cumsum_emit(Emitter& e, const Node& n) {
  const Value& out = e.graph().value(n.output);
  e.line(out.name, "R.cumsum(" + e.in_name(n, 0) + ", axis=" + std::to_string(n.int_attr("axis")) + ", dtype=\"" +
                       dtype_name(out.dtype) + "\")");
}

void log_softmax_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.nn.log_softmax(" + e.in_name(n, 0) + ", axis=" + std::to_string(n.int_attr("axis")) + ")");
}

}  // namespace

std::vector<OpDef> float_reduce_ops() {
  std::vector<OpDef> defs;
  for (const char* name : {"float_sum", "float_prod", "float_mean", "float_amax", "float_amin", "float_var", "float_any"}) {
    defs.push_back({name, OpKind::Float, reduce_rule, reduce_emit, function_runner<run_float_reduce>});
  }
  defs.push_back({"float_argmax", OpKind::Float, arg_reduce_rule, arg_reduce_emit, function_runner<run_float_arg_reduce>});
  defs.push_back({"float_argmin", OpKind::Float, arg_reduce_rule, arg_reduce_emit, function_runner<run_float_arg_reduce>});
  defs.push_back({"float_cumsum", OpKind::Float, cumsum_rule, cumsum_emit, function_runner<run_float_cumsum>});
  defs.push_back({"float_log_softmax", OpKind::Float, log_softmax_rule, log_softmax_emit, function_runner<run_float_log_softmax>});
  for (OpDef& def : defs) def.any_dtype = true;
  return defs;
}

}  // namespace qnnpy
