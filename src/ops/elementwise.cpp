// Element-wise ops: add and mul of two tensors, relu, and the table ops (one
// 8-bit input value -> one output value: scalars and activations).
#include <cmath>
#include <string>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/runners.h"
#include "runtime/ops/unary_tables.h"

namespace qnnpy {
namespace {

// add: same shapes (QFunctional.add); "relu" fuses a ReLU before requantization.
Shape add_rule(const Checker& c, const Value&) {
  c.inputs(2);
  c.quantized(c.in(0));
  c.quantized(c.in(1));
  c.n.int_attr("relu");
  if (c.in(0).shape != c.in(1).shape) {
    c.fail("input shapes differ: " + shape_str(c.in(0).shape) + " vs " + shape_str(c.in(1).shape));
  }
  return c.in(0).shape;
}

// mul: NumPy broadcasting of the two shapes (PyTorch's rule for binary ops).
Shape mul_rule(const Checker& c, const Value&) {
  c.inputs(2);
  c.quantized(c.in(0));
  c.quantized(c.in(1));
  return c.broadcast(c.in(0).shape, c.in(1).shape);
}

// dequantize both inputs -> R.add / R.multiply -> fused relu -> quantize.
void emit_binary(Emitter& e, const Node& n, const std::string& suffix, const std::string& relax_op) {
  const std::string a = e.input(n, 0, "a");
  const std::string b = e.input(n, 1, "b");
  const std::string y = e.emit(e.out_name(n) + suffix, relax_op + "(" + a + ", " + b + ")");
  e.quantize_output(n, e.bias_and_relu(n, y, 0));
}

void add_emit(Emitter& e, const Node& n) { emit_binary(e, n, "_sum", "R.add"); }
void mul_emit(Emitter& e, const Node& n) { emit_binary(e, n, "_prod", "R.multiply"); }

void relu_emit(Emitter& e, const Node& n) {
  e.unary(n, [](const std::string& x) { return "R.nn.relu(" + x + ")"; });
}

Shape scalar_rule(const Checker& c, const Value& out) {
  c.n.float_attr("scalar");
  return same_shape_unary(c, out);
}

// quantized::add_scalar adds round(c / s_in) input steps in int64 (runtime/ops/unary_tables.cpp); a
// scalar of more than 2^31 steps saturates every output and would overflow that conversion.
Shape add_scalar_rule(const Checker& c, const Value& out) {
  const Shape shape = scalar_rule(c, out);
  const double steps = c.n.float_attr("scalar") / static_cast<double>(c.in(0).q.scale[0]);
  if (!(std::fabs(steps) <= 2147483648.0)) {
    c.fail("scalar " + std::to_string(c.n.float_attr("scalar")) + " is more than 2^31 input steps");
  }
  return shape;
}

std::string scalar_const(const Node& n) { return float_const(static_cast<float>(n.float_attr("scalar"))); }

void add_scalar_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return "R.add(" + x + ", " + scalar_const(n) + ")"; });
}

void mul_scalar_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return "R.multiply(" + x + ", " + scalar_const(n) + ")"; });
}

// hardswish(x) = x * relu6(x + 3) / 6 and hardsigmoid(x) = relu6(x + 3) / 6, as PyTorch defines them.
std::string relu6_x_plus_3(const std::string& x) { return "R.clip(R.add(" + x + ", " + float_const(3.0f) + "), 0.0, 6.0)"; }

void hardswish_emit(Emitter& e, const Node& n) {
  e.unary(n, [](const std::string& x) {
    return "R.divide(R.multiply(" + x + ", " + relu6_x_plus_3(x) + "), " + float_const(6.0f) + ")";
  });
}

void hardsigmoid_emit(Emitter& e, const Node& n) {
  e.unary(n, [](const std::string& x) { return "R.divide(" + relu6_x_plus_3(x) + ", " + float_const(6.0f) + ")"; });
}

void sigmoid_emit(Emitter& e, const Node& n) {
  e.unary(n, [](const std::string& x) { return "R.sigmoid(" + x + ")"; });
}

Shape leaky_relu_rule(const Checker& c, const Value& out) {
  c.n.float_attr("alpha");
  return same_shape_unary(c, out);
}

void leaky_relu_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return "R.nn.leakyrelu(" + x + ", alpha=" + float_literal(n.float_attr("alpha")) + ")"; });
}

// clamp to [min, max] in real values (relu6, hardtanh).
Shape clamp_rule(const Checker& c, const Value& out) {
  c.n.float_attr("min");
  c.n.float_attr("max");
  return same_shape_unary(c, out);
}

void clamp_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) {
    return "R.clip(" + x + ", " + float_literal(n.float_attr("min")) + ", " + float_literal(n.float_attr("max")) + ")";
  });
}

// elu(x) = x for x > 0, alpha * (exp(x) - 1) otherwise (Relax 0.27 has no R.nn.elu).
Shape elu_rule(const Checker& c, const Value& out) {
  c.n.float_attr("alpha");
  return same_shape_unary(c, out);
}

void elu_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) {
    return "R.where(R.greater(" + x + ", " + float_const(0.0f) + "), " + x + ", R.multiply(R.subtract(R.exp(" + x + "), " +
           float_const(1.0f) + "), " + float_const(static_cast<float>(n.float_attr("alpha"))) + "))";
  });
}

// quantized_tanh: PyTorch's quantized tanh, output qparams fixed by PyTorch (2/256, 128 for uint8; 0 for int8).
void tanh_emit(Emitter& e, const Node& n) {
  e.unary(n, [](const std::string& x) { return "R.tanh(" + x + ")"; });
}

}  // namespace

std::vector<OpDef> elementwise_ops() {
  return {
      {"add", OpKind::Requantizing, add_rule, add_emit, function_runner<run_add>},
      {"mul", OpKind::Requantizing, mul_rule, mul_emit, function_runner<run_mul>},
      {"relu", OpKind::QParamPreserving, same_shape_unary, relu_emit, function_runner<run_relu>},
      {"add_scalar", OpKind::Requantizing, add_scalar_rule, add_scalar_emit, table_runner<add_scalar_tables>},
      {"mul_scalar", OpKind::Requantizing, scalar_rule, mul_scalar_emit, table_runner<mul_scalar_tables>},
      {"hardswish", OpKind::Requantizing, same_shape_unary, hardswish_emit, table_runner<hardswish_tables>},
      {"hardsigmoid", OpKind::Requantizing, same_shape_unary, hardsigmoid_emit, table_runner<hardsigmoid_tables>},
      {"sigmoid", OpKind::Requantizing, same_shape_unary, sigmoid_emit, table_runner<sigmoid_tables>},
      {"leaky_relu", OpKind::Requantizing, leaky_relu_rule, leaky_relu_emit, table_runner<leaky_relu_tables>},
      {"clamp", OpKind::Requantizing, clamp_rule, clamp_emit, table_runner<clamp_tables>},
      {"elu", OpKind::Requantizing, elu_rule, elu_emit, table_runner<elu_tables>},
      {"quantized_tanh", OpKind::Requantizing, same_shape_unary, tanh_emit, table_runner<tanh_tables>},
  };
}

}  // namespace qnnpy
