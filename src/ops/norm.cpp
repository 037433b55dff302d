// batch_norm2d: a quantized BatchNorm2d (float32 gamma, beta, mean and variance
// params), with the fused relu of BNReLU2d as the int "relu".
#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

constexpr const char* kRoles[] = {"bn_weight", "bn_bias", "bn_running_mean", "bn_running_var"};

Shape batch_norm2d_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  for (const char* role : kRoles) {
    const Param& p = c.g.node_param(c.n, role);
    if (p.dtype != DType::Float32 || p.shape != Shape{x.shape[1]}) {
      c.fail(std::string(role) + " must be float32 " + shape_str({x.shape[1]}) + " (one per channel), got " +
             dtype_name(p.dtype) + " " + shape_str(p.shape));
    }
  }
  if (!(c.n.float_attr("eps") >= 0.0)) c.fail("eps must be >= 0");
  c.n.int_attr("relu");
  return x.shape;
}

void batch_norm2d_emit(Emitter& e, const Node& n) {
  const std::string& o = e.out_name(n);
  const std::string x = e.input(n, 0, "x");
  std::string args;
  for (const char* role : kRoles) args += ", " + e.graph().node_param(n, role).name;
  const std::string bn = e.emit(o + "_bn", "R.nn.batch_norm(" + x + args + ", axis=1, epsilon=" +
                                               float_literal(n.float_attr("eps")) + ", training=False)");
  e.quantize_output(n, e.bias_and_relu(n, e.emit(o + "_norm", bn + "[0]"), 4));
}

}  // namespace

std::vector<OpDef> norm_ops() {
  return {
      {"batch_norm2d", OpKind::Requantizing, batch_norm2d_rule, batch_norm2d_emit, function_runner<run_batch_norm2d>},
  };
}

}  // namespace qnnpy
