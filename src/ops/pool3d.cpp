// 3-D average pools on quantized NCDHW tensors: avg_pool3d and adaptive_avg_pool3d; the output keeps the
// input's qparams (PyTorch's quantized 3-D pools; runners: runtime/ops/pool3d_ops.cpp).
#include <initializer_list>

#include "emit/emitter.h"
#include "ir/limits.h"
#include "ops/op_def.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

std::string python_bool(int64_t v) { return v ? "True" : "False"; }

// The product of positive window extents, or kMaxWindowTaps + 1 where it exceeds kMaxWindowTaps (no overflow
// whatever the attributes hold).
int64_t window_taps(std::initializer_list<int64_t> extents) {
  int64_t taps = 1;
  for (int64_t e : extents) {
    if (e > kMaxWindowTaps / taps) return kMaxWindowTaps + 1;
    taps *= e;
  }
  return taps;
}

Shape avg_pool3d_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 5);
  auto kernel = c.per_axis("kernel", 3), stride = c.per_axis("stride", 3), padding = c.per_axis("padding", 3);
  c.positive(kernel, "kernel");
  c.positive(stride, "stride");
  c.non_negative(padding, "padding");
  if (window_taps({kernel[0], kernel[1], kernel[2]}) > kMaxWindowTaps) {
    c.fail("a kernel of " + shape_str(kernel) + " overflows the int32 window sums");
  }
  const bool ceil_mode = c.n.int_attr("ceil_mode") != 0;
  c.n.int_attr("count_include_pad");
  if (c.n.int_attr("divisor_override") < 0) c.fail("divisor_override must be >= 0 (0: none)");
  Shape out{x.shape[0], x.shape[1], 0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    if (2 * padding[i] > kernel[i]) c.fail("padding must be at most half the kernel");
    out[2 + i] = window_output_size(x.shape[2 + i], kernel[i], stride[i], padding[i], 1, ceil_mode);
    if (out[2 + i] < 1) c.fail("kernel larger than padded input " + shape_str(x.shape));
  }
  return out;
}

// A divisor_override d scales PyTorch's count_include_pad average by kd * kh * kw / d (as avg_pool2d's emission).
void avg_pool3d_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) {
    const auto &k = n.ints_attr("kernel"), &p = n.ints_attr("padding");
    const int64_t divisor = n.int_attr("divisor_override");
    const std::string pool = "R.nn.avg_pool3d(" + x + ", pool_size=" + int_list(k) + ", strides=" + int_list(n.ints_attr("stride")) +
                             ", padding=" + int_list({p[0], p[1], p[2], p[0], p[1], p[2]}) + ", ceil_mode=" +
                             python_bool(n.int_attr("ceil_mode")) + ", count_include_pad=" +
                             python_bool(n.int_attr("count_include_pad") || divisor) + ", layout=\"NCDHW\")";
    if (!divisor) return pool;
    return "R.multiply(" + pool + ", " + float_const(static_cast<float>(k[0] * k[1] * k[2]) / static_cast<float>(divisor)) + ")";
  });
}

Shape adaptive_avg_pool3d_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 5);
  auto size = c.per_axis("output_size", 3);
  c.positive(size, "output_size");
  // A window spans at most ceil(in / out) + 1 input positions per axis.
  if (window_taps({x.shape[2] / size[0] + 2, x.shape[3] / size[1] + 2, x.shape[4] / size[2] + 2}) > kMaxWindowTaps) {
    c.fail("pooling windows of input " + shape_str(x.shape) + " to " + shape_str(size) + " overflow the int32 sums");
  }
  return {x.shape[0], x.shape[1], size[0], size[1], size[2]};
}

void adaptive_avg_pool3d_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) {
    return "R.nn.adaptive_avg_pool3d(" + x + ", output_size=" + int_list(n.ints_attr("output_size")) + ", layout=\"NCDHW\")";
  });
}

}  // namespace

std::vector<OpDef> pool3d_ops() {
  return {
      {"avg_pool3d", OpKind::QParamPreserving, avg_pool3d_rule, avg_pool3d_emit, function_runner<run_avg_pool3d>},
      {"adaptive_avg_pool3d", OpKind::QParamPreserving, adaptive_avg_pool3d_rule, adaptive_avg_pool3d_emit,
       function_runner<run_adaptive_avg_pool3d>},
  };
}

}  // namespace qnnpy
