// Element-wise float ops of one input: one table entry per op, its Relax expression and its
// functions (the runner, runtime/ops/float_elementwise.h, calls them). The float32 functions
// follow the formulas of PyTorch's CPU kernels; exp, log, tanh, erf... come from the C library
// where PyTorch's vector lanes use SLEEF, so results may differ in the last bit.
//
// float32 -> float32 for every op with `on_float`; abs, neg and sign also int64 / int32 ->
// the same dtype; isnan / isinf float32 -> bool; logical_not any dtype -> bool; bitwise_not
// integers -> the same dtype. float_elu ("alpha", "scale", "input_scale") and float_leaky_relu
// ("negative_slope") take attributes.
#include <cmath>
#include <map>
#include <string>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/float_elementwise.h"
#include "runtime/ops/plain_values.h"

namespace qnnpy {
namespace {

using Relax = std::string (*)(const std::string& x);

struct UnaryOp {
  const char* op;
  Relax relax;
  UnaryFunctions f;
};

// Integer negation and absolute value wrap at INT64_MIN, as two's complement does (no UB).
int64_t wrap_neg(int64_t v) { return static_cast<int64_t>(0 - static_cast<uint64_t>(v)); }
float relu6_plus_3(float x) { return std::min(std::max(x + 3.0f, 0.0f), 6.0f); }

const std::vector<UnaryOp>& unary_ops() {
  static const std::vector<UnaryOp> ops = {
      {"float_abs", [](const std::string& x) { return call("R.abs", x); },
       {[](float v) { return std::fabs(v); }, nullptr, [](int64_t v) { return v < 0 ? wrap_neg(v) : v; }}},
      {"float_neg", [](const std::string& x) { return call("R.negative", x); },
       {[](float v) { return -v; }, nullptr, wrap_neg}},
      {"float_sign", [](const std::string& x) { return call("R.sign", x); },
       {[](float v) { return static_cast<float>((0.0f < v) - (v < 0.0f)); }, nullptr,
        [](int64_t v) -> int64_t { return (0 < v) - (v < 0); }}},
      {"float_exp", [](const std::string& x) { return call("R.exp", x); }, {[](float v) { return std::exp(v); }}},
      {"float_expm1", [](const std::string& x) { return call("R.subtract", call("R.exp", x), float_const(1.0f)); },
       {[](float v) { return std::expm1(v); }}},
      {"float_log", [](const std::string& x) { return call("R.log", x); }, {[](float v) { return std::log(v); }}},
      {"float_log2", [](const std::string& x) { return call("R.divide", call("R.log", x), float_const(std::log(2.0f))); },
       {[](float v) { return std::log2(v); }}},
      {"float_log10", [](const std::string& x) { return call("R.divide", call("R.log", x), float_const(std::log(10.0f))); },
       {[](float v) { return std::log10(v); }}},
      {"float_log1p", [](const std::string& x) { return call("R.log", call("R.add", x, float_const(1.0f))); },
       {[](float v) { return std::log1p(v); }}},
      {"float_sqrt", [](const std::string& x) { return call("R.sqrt", x); }, {[](float v) { return std::sqrt(v); }}},
      {"float_rsqrt", [](const std::string& x) { return call("R.rsqrt", x); }, {[](float v) { return 1.0f / std::sqrt(v); }}},
      {"float_reciprocal", [](const std::string& x) { return call("R.divide", float_const(1.0f), x); },
       {[](float v) { return 1.0f / v; }}},
      {"float_sin", [](const std::string& x) { return call("R.sin", x); }, {[](float v) { return std::sin(v); }}},
      {"float_cos", [](const std::string& x) { return call("R.cos", x); }, {[](float v) { return std::cos(v); }}},
      {"float_tan", [](const std::string& x) { return call("R.tan", x); }, {[](float v) { return std::tan(v); }}},
      {"float_sinh", [](const std::string& x) { return call("R.sinh", x); }, {[](float v) { return std::sinh(v); }}},
      {"float_cosh", [](const std::string& x) { return call("R.cosh", x); }, {[](float v) { return std::cosh(v); }}},
      {"float_tanh", [](const std::string& x) { return call("R.tanh", x); }, {[](float v) { return std::tanh(v); }}},
      {"float_asin", [](const std::string& x) { return call("R.asin", x); }, {[](float v) { return std::asin(v); }}},
      {"float_acos", [](const std::string& x) { return call("R.acos", x); }, {[](float v) { return std::acos(v); }}},
      {"float_atan", [](const std::string& x) { return call("R.atan", x); }, {[](float v) { return std::atan(v); }}},
      {"float_asinh", [](const std::string& x) { return call("R.asinh", x); }, {[](float v) { return std::asinh(v); }}},
      {"float_acosh", [](const std::string& x) { return call("R.acosh", x); }, {[](float v) { return std::acosh(v); }}},
      {"float_atanh", [](const std::string& x) { return call("R.atanh", x); }, {[](float v) { return std::atanh(v); }}},
      {"float_erf", [](const std::string& x) { return call("R.erf", x); }, {[](float v) { return std::erf(v); }}},
      // PyTorch's CPU sigmoid and SiLU: 1 / (1 + exp(-x)) and x / (1 + exp(-x)).
      {"float_sigmoid", [](const std::string& x) { return call("R.sigmoid", x); },
       {[](float v) { return 1.0f / (1.0f + std::exp(-v)); }}},
      {"float_silu", [](const std::string& x) { return call("R.nn.silu", x); },
       {[](float v) { return v / (1.0f + std::exp(-v)); }}},
      {"float_relu", [](const std::string& x) { return call("R.nn.relu", x); }, {[](float v) { return std::max(v, 0.0f); }}},
      // hardsigmoid(x) = relu6(x + 3) / 6 and hardswish(x) = x * relu6(x + 3) / 6, as PyTorch defines them.
      {"float_hardsigmoid",
       [](const std::string& x) {
         return call("R.divide", "R.clip(" + call("R.add", x, float_const(3.0f)) + ", 0.0, 6.0)", float_const(6.0f));
       },
       {[](float v) { return relu6_plus_3(v) / 6.0f; }}},
      {"float_hardswish",
       [](const std::string& x) {
         return call("R.divide", call("R.multiply", x, "R.clip(" + call("R.add", x, float_const(3.0f)) + ", 0.0, 6.0)"),
                     float_const(6.0f));
       },
       {[](float v) { return v * relu6_plus_3(v) / 6.0f; }}},
      {"float_ceil", [](const std::string& x) { return call("R.ceil", x); }, {[](float v) { return std::ceil(v); }}},
      {"float_floor", [](const std::string& x) { return call("R.floor", x); }, {[](float v) { return std::floor(v); }}},
      // Half to even, as torch.round (the default rounding mode of nearbyint).
      {"float_round", [](const std::string& x) { return call("R.round", x); }, {[](float v) { return std::nearbyint(v); }}},
      {"float_trunc", [](const std::string& x) { return call("R.trunc", x); }, {[](float v) { return std::trunc(v); }}},
      {"float_isnan", [](const std::string& x) { return call("R.isnan", x); },
       {nullptr, [](float v) -> int64_t { return std::isnan(v); }}},
      {"float_isinf", [](const std::string& x) { return call("R.isinf", x); },
       {nullptr, [](float v) -> int64_t { return std::isinf(v); }}},
      {"float_logical_not",
       [](const std::string& x) { return call("R.logical_not", "R.astype(" + x + ", \"bool\")"); },
       {nullptr, [](float v) -> int64_t { return v == 0.0f; }, [](int64_t v) -> int64_t { return v == 0; }}},
      {"float_bitwise_not", [](const std::string& x) { return call("R.bitwise_not", x); },
       {nullptr, nullptr, [](int64_t v) { return ~v; }}},
  };
  return ops;
}

const UnaryOp& unary_op(const Node& n) {
  static const std::map<std::string, const UnaryOp*> by_name = [] {
    std::map<std::string, const UnaryOp*> m;
    for (const UnaryOp& op : unary_ops()) m[op.op] = &op;
    return m;
  }();
  return *by_name.at(n.op);
}

// The output's dtype: float32 for a float32 op, bool for a test, the input's own for integers.
Shape unary_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  const UnaryFunctions& f = unary_op(c.n).f;
  const Value& x = c.in(0);
  if (x.dtype == DType::Float32 && f.float_test) {
    c.dtype(out, DType::Bool);
  } else if (x.dtype == DType::Float32 && f.on_float) {
    c.dtype(out, DType::Float32);
  } else if (x.dtype != DType::Float32 && f.on_integer && (x.dtype != DType::Bool || f.float_test)) {
    c.dtype(out, f.float_test ? DType::Bool : x.dtype);
  } else {
    c.fail(std::string("does not take ") + dtype_name(x.dtype) + " input '" + x.name + "'");
  }
  return x.shape;
}

void unary_emit(Emitter& e, const Node& n) { e.line(e.out_name(n), unary_op(n).relax(e.in_name(n, 0))); }

std::unique_ptr<PreparedOp> unary_runner(const Graph&, const Node& n, Profile) {
  return std::make_unique<ElementwiseUnary>(unary_op(n).f);
}

// --- ops with attributes ----------------------------------------------------------------

Shape float_only_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  c.dtype(c.in(0), DType::Float32);
  c.dtype(out, DType::Float32);
  return c.in(0).shape;
}

// PyTorch's ELU: x > 0 ? scale * x : scale * alpha * (exp(x * input_scale) - 1).
void elu_emit(Emitter& e, const Node& n) {
  const std::string& x = e.in_name(n, 0);
  const float alpha = static_cast<float>(n.float_attr("alpha")), scale = static_cast<float>(n.float_attr("scale"));
  const float input_scale = static_cast<float>(n.float_attr("input_scale"));
  const std::string negative =
      call("R.multiply", call("R.subtract", call("R.exp", call("R.multiply", x, float_const(input_scale))), float_const(1.0f)),
           float_const(alpha * scale));
  e.line(e.out_name(n), "R.where(" + call("R.greater", x, float_const(0.0f)) + ", " +
                            call("R.multiply", x, float_const(scale)) + ", " + negative + ")");
}

void run_float_elu(const OpArgs& a) {
  const float alpha = static_cast<float>(a.node.float_attr("alpha")), scale = static_cast<float>(a.node.float_attr("scale"));
  const float input_scale = static_cast<float>(a.node.float_attr("input_scale"));
  float_unary(a, [=](float v) { return v > 0.0f ? v * scale : std::expm1(v * input_scale) * alpha * scale; });
}

void leaky_relu_emit(Emitter& e, const Node& n) {
  const std::string& x = e.in_name(n, 0);
  e.line(e.out_name(n), "R.where(" + call("R.greater", x, float_const(0.0f)) + ", " + x + ", " +
                            call("R.multiply", x, float_const(static_cast<float>(n.float_attr("negative_slope")))) + ")");
}

void run_float_leaky_relu(const OpArgs& a) {
  const float slope = static_cast<float>(a.node.float_attr("negative_slope"));
  float_unary(a, [=](float v) { return v > 0.0f ? v : v * slope; });
}

}  // namespace

std::vector<OpDef> float_unary_ops() {
  std::vector<OpDef> defs;
  for (const UnaryOp& op : unary_ops()) {
    OpDef def{op.op, OpKind::Float, unary_rule, unary_emit, unary_runner};
    def.any_dtype = true;
    defs.push_back(def);
  }
  defs.push_back({"float_elu", OpKind::Float, float_only_rule, elu_emit, function_runner<run_float_elu>});
  defs.push_back({"float_leaky_relu", OpKind::Float, float_only_rule, leaky_relu_emit, function_runner<run_float_leaky_relu>});
  return defs;
}

}  // namespace qnnpy
