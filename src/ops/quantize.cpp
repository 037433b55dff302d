// quantize (float32 graph input -> integer) and dequantize (integer -> float32 output).
#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

Shape quantize_rule(const Checker& c, const Value&) {
  c.inputs(1);
  if (c.in(0).dtype != DType::Float32) c.fail("input must be float32");
  return c.in(0).shape;
}

void quantize_emit(Emitter& e, const Node& n) { e.quantize_output(n, e.graph().value(n.inputs[0]).name); }

Shape dequantize_rule(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  return c.in(0).shape;
}

void dequantize_emit(Emitter& e, const Node& n) {
  const Value& x = e.graph().value(n.inputs[0]);
  e.line(e.out_name(n), "R.dequantize(" + x.name + ", " + float_const(x.q.scale[0]) + ", " + int_const(x.q.zero_point[0]) +
                            ", out_dtype=\"float32\")");
}

}  // namespace

std::vector<OpDef> quantize_ops() {
  return {
      {"quantize", OpKind::Quantize, quantize_rule, quantize_emit, function_runner<run_quantize>},
      {"dequantize", OpKind::Dequantize, dequantize_rule, dequantize_emit, function_runner<run_dequantize>},
  };
}

}  // namespace qnnpy
