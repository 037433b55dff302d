// Element-wise float ops of two inputs of one dtype, broadcast (NumPy's rule, PyTorch's for
// binary ops; the converters cast the operands to PyTorch's promoted dtype first): one table
// entry per op, its Relax call and its functions (the runner, runtime/ops/float_elementwise.h,
// calls them). Arithmetic takes float32 or integers (int64 / int32, wrapping as two's
// complement does); comparisons and logical ops any dtype, giving bool; bitwise ops integers or
// bool. Integer division and remainder by 0, which PyTorch refuses with an error, give 0.
//
// float_where (condition, x, y: bool, then two inputs of one dtype, broadcast), float_cast (to
// the output's dtype) and float_constant (no input; param "value", any plain dtype) close the
// family of element-wise ops.
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/float_elementwise.h"

namespace qnnpy {
namespace {

using Relax = std::string (*)(const std::string& x, const std::string& y);

struct BinaryOp {
  const char* op;
  Relax relax;
  BinaryFunctions f;
  bool takes_bool = false;  // bool operands (logical, bitwise and equality ops)
  Relax integer_relax = nullptr;  // for integer operands, where Relax's op takes floats only
};

// Integer arithmetic in uint64, where overflow wraps instead of being undefined.
int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

// Python's floor division and remainder on integers (the sign of the remainder follows the divisor).
int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_sub(0, a);
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// PyTorch's float floor division (c10/util/generic_math.h, div_floor_floating): from fmod, so
// that a == b * q + r holds exactly where it can, the quotient rounded to the nearest integer
// when floor is off by one half or more.
float floor_div(float a, float b) {
  if (b == 0.0f) return a / b;
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f)) div -= 1.0f;
  if (div == 0.0f) return std::copysign(0.0f, a / b);
  float q = std::floor(div);
  if (div - q > 0.5f) q += 1.0f;
  return q;
}

// PyTorch's float remainder: fmod, moved by the divisor when their signs differ.
float floor_mod(float a, float b) {
  float mod = std::fmod(a, b);
  if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f)) mod += b;
  return mod;
}

// torch.maximum / minimum propagate NaN.
float nan_max(float a, float b) { return std::isnan(a) || std::isnan(b) ? std::nanf("") : std::max(a, b); }
float nan_min(float a, float b) { return std::isnan(a) || std::isnan(b) ? std::nanf("") : std::min(a, b); }

int64_t integer_pow(int64_t base, int64_t exponent) {
  if (exponent < 0) return base == 1 ? 1 : base == -1 ? (exponent % 2 ? -1 : 1) : 0;
  int64_t result = 1;
  for (; exponent > 0; exponent >>= 1, base = wrap_mul(base, base)) {
    if (exponent & 1) result = wrap_mul(result, base);
  }
  return result;
}

std::string as_bool(const std::string& x) { return "R.astype(" + x + ", \"bool\")"; }

// The float arithmetic of the basic ops and the power, once: their on_float and their runs (binary_runs).
struct Add { static float apply(float a, float b) { return a + b; } };
struct Sub { static float apply(float a, float b) { return a - b; } };
struct Mul { static float apply(float a, float b) { return a * b; } };
struct Div { static float apply(float a, float b) { return a / b; } };
// x ** 2 as x * x, what PyTorch computes for a power of 2 (aten/src/ATen/native/cpu/PowKernel.cpp,
// pow_tensor_scalar_optimized_kernel); other powers through the C library.
struct Pow { static float apply(float a, float b) { return b == 2.0f ? a * a : std::pow(a, b); } };

const std::vector<BinaryOp>& binary_ops() {
  static const std::vector<BinaryOp> ops = {
      {"float_add", [](const std::string& x, const std::string& y) { return call("R.add", x, y); },
       {Add::apply, nullptr, wrap_add, binary_runs<Add>}},
      {"float_sub", [](const std::string& x, const std::string& y) { return call("R.subtract", x, y); },
       {Sub::apply, nullptr, wrap_sub, binary_runs<Sub>}},
      {"float_mul", [](const std::string& x, const std::string& y) { return call("R.multiply", x, y); },
       {Mul::apply, nullptr, wrap_mul, binary_runs<Mul>}},
      {"float_div", [](const std::string& x, const std::string& y) { return call("R.divide", x, y); },
       {Div::apply, nullptr, nullptr, binary_runs<Div>}},
      {"float_floor_divide", [](const std::string& x, const std::string& y) { return call("R.floor_divide", x, y); },
       {[](float a, float b) { return floor_div(a, b); }, nullptr, [](int64_t a, int64_t b) { return floor_div(a, b); }}},
      {"float_trunc_divide", [](const std::string& x, const std::string& y) { return call("R.trunc", call("R.divide", x, y)); },
       {[](float a, float b) { return std::trunc(a / b); }, nullptr,
        [](int64_t a, int64_t b) -> int64_t { return b == 0 ? 0 : b == -1 ? wrap_sub(0, a) : a / b; }},
       false, [](const std::string& x, const std::string& y) { return call("R.divide", x, y); }},
      {"float_remainder", [](const std::string& x, const std::string& y) { return call("R.floor_mod", x, y); },
       {[](float a, float b) { return floor_mod(a, b); }, nullptr, [](int64_t a, int64_t b) { return floor_mod(a, b); }}},
      {"float_fmod", [](const std::string& x, const std::string& y) { return call("R.mod", x, y); },
       {[](float a, float b) { return std::fmod(a, b); }, nullptr,
        [](int64_t a, int64_t b) -> int64_t { return b == 0 || b == -1 ? 0 : a % b; }}},
      {"float_pow", [](const std::string& x, const std::string& y) { return call("R.power", x, y); },
       {Pow::apply, nullptr, integer_pow, binary_runs<Pow>}, false,
       [](const std::string& x, const std::string& y) {  // float64 holds the int64 powers of moderate size exactly
         return "R.astype(R.round(" + call("R.power", "R.astype(" + x + ", \"float64\")", "R.astype(" + y + ", \"float64\")") +
                "), \"int64\")";
       }},
      {"float_maximum", [](const std::string& x, const std::string& y) { return call("R.maximum", x, y); },
       {nan_max, nullptr, [](int64_t a, int64_t b) { return std::max(a, b); }}},
      {"float_minimum", [](const std::string& x, const std::string& y) { return call("R.minimum", x, y); },
       {nan_min, nullptr, [](int64_t a, int64_t b) { return std::min(a, b); }}},
      {"float_atan2", [](const std::string& x, const std::string& y) { return call("R.atan2", x, y); },
       {[](float a, float b) { return std::atan2(a, b); }}},
      {"float_eq", [](const std::string& x, const std::string& y) { return call("R.equal", x, y); },
       {nullptr, [](float a, float b) -> int64_t { return a == b; }, [](int64_t a, int64_t b) -> int64_t { return a == b; }},
       true},
      {"float_ne", [](const std::string& x, const std::string& y) { return call("R.not_equal", x, y); },
       {nullptr, [](float a, float b) -> int64_t { return a != b; }, [](int64_t a, int64_t b) -> int64_t { return a != b; }},
       true},
      {"float_lt", [](const std::string& x, const std::string& y) { return call("R.less", x, y); },
       {nullptr, [](float a, float b) -> int64_t { return a < b; }, [](int64_t a, int64_t b) -> int64_t { return a < b; }}},
      {"float_le", [](const std::string& x, const std::string& y) { return call("R.less_equal", x, y); },
       {nullptr, [](float a, float b) -> int64_t { return a <= b; }, [](int64_t a, int64_t b) -> int64_t { return a <= b; }}},
      {"float_gt", [](const std::string& x, const std::string& y) { return call("R.greater", x, y); },
       {nullptr, [](float a, float b) -> int64_t { return a > b; }, [](int64_t a, int64_t b) -> int64_t { return a > b; }}},
      {"float_ge", [](const std::string& x, const std::string& y) { return call("R.greater_equal", x, y); },
       {nullptr, [](float a, float b) -> int64_t { return a >= b; }, [](int64_t a, int64_t b) -> int64_t { return a >= b; }}},
      {"float_logical_and", [](const std::string& x, const std::string& y) { return call("R.logical_and", as_bool(x), as_bool(y)); },
       {nullptr, [](float a, float b) -> int64_t { return a != 0.0f && b != 0.0f; },
        [](int64_t a, int64_t b) -> int64_t { return a != 0 && b != 0; }},
       true},
      {"float_logical_or", [](const std::string& x, const std::string& y) { return call("R.logical_or", as_bool(x), as_bool(y)); },
       {nullptr, [](float a, float b) -> int64_t { return a != 0.0f || b != 0.0f; },
        [](int64_t a, int64_t b) -> int64_t { return a != 0 || b != 0; }},
       true},
      {"float_logical_xor", [](const std::string& x, const std::string& y) { return call("R.logical_xor", as_bool(x), as_bool(y)); },
       {nullptr, [](float a, float b) -> int64_t { return (a != 0.0f) != (b != 0.0f); },
        [](int64_t a, int64_t b) -> int64_t { return (a != 0) != (b != 0); }},
       true},
      {"float_bitwise_and", [](const std::string& x, const std::string& y) { return call("R.bitwise_and", x, y); },
       {nullptr, nullptr, [](int64_t a, int64_t b) { return a & b; }}, true},
      {"float_bitwise_or", [](const std::string& x, const std::string& y) { return call("R.bitwise_or", x, y); },
       {nullptr, nullptr, [](int64_t a, int64_t b) { return a | b; }}, true},
      {"float_bitwise_xor", [](const std::string& x, const std::string& y) { return call("R.bitwise_xor", x, y); },
       {nullptr, nullptr, [](int64_t a, int64_t b) { return a ^ b; }}, true},
  };
  return ops;
}

const BinaryOp& binary_op(const Node& n) {
  static const std::map<std::string, const BinaryOp*> by_name = [] {
    std::map<std::string, const BinaryOp*> m;
    for (const BinaryOp& op : binary_ops()) m[op.op] = &op;
    return m;
  }();
  return *by_name.at(n.op);
}

// Comparisons and logical ops give bool (they have a float test); bitwise ops on bool, bool;
// arithmetic the operands' dtype.
bool gives_bool(const BinaryOp& op, DType operands) { return op.f.float_test || operands == DType::Bool; }

Shape binary_rule(const Checker& c, const Value& out) {
  c.inputs(2);
  const BinaryOp& op = binary_op(c.n);
  const DType t = c.same_dtype();
  const bool takes = t == DType::Float32 ? (op.f.on_float || op.f.float_test)
                                         : op.f.on_integer && (t != DType::Bool || op.takes_bool);
  if (!takes) c.fail(std::string("does not take ") + dtype_name(t) + " inputs");
  c.dtype(out, gives_bool(op, t) ? DType::Bool : t);
  return c.broadcast(c.in(0).shape, c.in(1).shape);
}

void binary_emit(Emitter& e, const Node& n) {
  const BinaryOp& op = binary_op(n);
  const bool integers = e.graph().value(n.inputs[0]).dtype != DType::Float32;
  const Relax relax = integers && op.integer_relax ? op.integer_relax : op.relax;
  std::string y = relax(e.in_name(n, 0), e.in_name(n, 1));
  const DType out = e.graph().value(n.output).dtype;
  if (integers && op.integer_relax && out != DType::Int64) y = "R.astype(" + y + ", \"" + dtype_name(out) + "\")";
  e.line(e.out_name(n), y);
}

std::unique_ptr<PreparedOp> binary_runner(const Graph&, const Node& n, Profile) {
  return std::make_unique<ElementwiseBinary>(binary_op(n).f);
}

// --- where, cast, constant ------------------------------------------------------------

Shape where_rule(const Checker& c, const Value& out) {
  c.inputs(3);
  c.dtype(c.in(0), DType::Bool);
  c.dtype(out, c.same_dtype(1));
  return c.broadcast(c.in(0).shape, c.broadcast(c.in(1).shape, c.in(2).shape));
}

void where_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.where(" + e.in_name(n, 0) + ", " + e.in_name(n, 1) + ", " + e.in_name(n, 2) + ")");
}

Shape cast_rule(const Checker& c, const Value&) {
  c.inputs(1);
  return c.in(0).shape;
}

void cast_emit(Emitter& e, const Node& n) {
  const Value& out = e.graph().value(n.output);
  e.line(out.name, "R.astype(" + e.in_name(n, 0) + ", \"" + dtype_name(out.dtype) + "\")");
}

Shape constant_rule(const Checker& c, const Value& out) {
  c.inputs(0);
  const Param& p = c.g.node_param(c.n, "value");  // infinities allowed (masks); add_param refused NaN
  if (!is_plain_dtype(p.dtype) || !p.q.empty()) c.fail("param 'value' must be float32, int64, int32 or bool without qparams");
  if (!p.exported && !p.shape.empty()) c.fail("a runtime-only (inline) constant must be a scalar, got shape " + shape_str(p.shape));
  c.dtype(out, p.dtype);
  return p.shape;
}

// An exported param is a function parameter (bound to the node's variable); a runtime-only one,
// a scalar, an inline constant.
void constant_emit(Emitter& e, const Node& n) {
  const Param& p = e.graph().node_param(n, "value");
  if (p.exported) return e.line(e.out_name(n), p.name);
  std::string value;
  switch (p.dtype) {
    case DType::Float32: value = scalar_const(*p.data<float>(), DType::Float32); break;
    case DType::Bool: value = scalar_const(*p.data<uint8_t>(), DType::Bool); break;
    case DType::Int32: value = "R.const(" + std::to_string(*p.data<int32_t>()) + ", \"int32\")"; break;
    default: value = "R.const(" + std::to_string(*p.data<int64_t>()) + ", \"int64\")"; break;
  }
  e.line(e.out_name(n), value);
}

}  // namespace

std::vector<OpDef> float_binary_ops() {
  std::vector<OpDef> defs;
  for (const BinaryOp& op : binary_ops()) defs.push_back({op.op, OpKind::Float, binary_rule, binary_emit, binary_runner});
  defs.push_back({"float_where", OpKind::Float, where_rule, where_emit, function_runner<run_float_where>});
  defs.push_back({"float_cast", OpKind::Float, cast_rule, cast_emit, function_runner<run_float_cast>});
  defs.push_back({"float_constant", OpKind::Float, constant_rule, constant_emit, function_runner<run_float_constant>});
  for (OpDef& def : defs) def.any_dtype = true;
  return defs;
}

}  // namespace qnnpy
