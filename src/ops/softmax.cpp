// quantized_softmax: PyTorch's quantized softmax (nnq.Softmax, quantized::softmax)
// along one axis, with output qparams of its own.
#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

Shape softmax_rule(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized_per_tensor(c.in(0));
  if (c.in(0).shape.empty()) c.fail("input must have at least one axis");
  c.axis("axis", c.in(0).shape.size());
  return c.in(0).shape;
}

void softmax_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return "R.nn.softmax(" + x + ", axis=" + std::to_string(n.int_attr("axis")) + ")"; });
}

}  // namespace

std::vector<OpDef> softmax_ops() {
  return {
      {"quantized_softmax", OpKind::Requantizing, softmax_rule, softmax_emit, function_runner<run_quantized_softmax>},
  };
}

}  // namespace qnnpy
