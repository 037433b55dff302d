// Pooling: max_pool2d, avg_pool2d, adaptive_avg_pool2d and the spatial mean, on
// NCHW tensors; the output keeps the input's qparams. float_max_pool2d and float_avg_pool2d:
// the same windows on float32 tensors (runners: runtime/ops/float_spatial.cpp).
#include "emit/emitter.h"
#include "ir/limits.h"
#include "ops/op_def.h"
#include "runtime/ops/float_spatial_runners.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

std::string bool_literal(int64_t v) { return v ? "True" : "False"; }

// The output shape of max_pool2d and float_max_pool2d.
Shape max_pool2d_shape(const Checker& c) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.rank(x, 4);
  auto kernel = c.pair("kernel"), stride = c.pair("stride"), padding = c.pair("padding"), dilation = c.pair("dilation");
  c.positive(kernel, "kernel");
  c.positive(stride, "stride");
  c.positive(dilation, "dilation");
  c.non_negative(padding, "padding");
  bool ceil_mode = c.n.int_attr("ceil_mode") != 0;
  Shape out{x.shape[0], x.shape[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (2 * padding[i] > kernel[i]) c.fail("padding must be at most half the kernel");
    out[2 + i] = window_output_size(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode);
    if (out[2 + i] < 1) c.fail("kernel larger than padded input " + shape_str(x.shape));
  }
  return out;
}

Shape max_pool2d_rule(const Checker& c, const Value&) {
  c.quantized(c.in(0));
  return max_pool2d_shape(c);
}

std::string max_pool2d_expr(const Node& n, const std::string& x) {
  return "R.nn.max_pool2d(" + x + ", pool_size=" + int_list(n.ints_attr("kernel")) +
         ", strides=" + int_list(n.ints_attr("stride")) + ", padding=" + padding4(n.ints_attr("padding")) +
         ", dilation=" + int_list(n.ints_attr("dilation")) + ", ceil_mode=" + bool_literal(n.int_attr("ceil_mode")) + ")";
}

void max_pool2d_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return max_pool2d_expr(n, x); });
}

// The optional `float_mean` flag (0 or 1) of adaptive_avg_pool2d, mean and avg_pool2d: 1 when PyTorch
// computes the node as dequantize -> float pooling or mean -> quantize (a PT2E island), whose rounding the
// runtime then reproduces (runtime/ops/pool_ops.cpp).
bool float_mean_flag(const Checker& c) {
  if (!c.n.ints.count("float_mean")) return false;
  const int64_t v = c.n.int_attr("float_mean");
  if (v != 0 && v != 1) c.fail("float_mean must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}

Shape adaptive_avg_pool2d_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  auto size = c.pair("output_size");
  c.positive(size, "output_size");
  float_mean_flag(c);  // checks the flag is 0 or 1
  // A window spans at most ceil(in / out) + 1 input positions per axis.
  const int64_t taps = (x.shape[2] / size[0] + 2) * (x.shape[3] / size[1] + 2);
  if (taps > kMaxWindowTaps) c.fail("pooling windows of up to " + std::to_string(taps) + " values overflow the int32 sums");
  return {x.shape[0], x.shape[1], size[0], size[1]};
}

void adaptive_avg_pool2d_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) {
    return "R.nn.adaptive_avg_pool2d(" + x + ", output_size=" + int_list(n.ints_attr("output_size")) + ")";
  });
}

// The output shape of avg_pool2d and float_avg_pool2d.
Shape avg_pool2d_shape(const Checker& c) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.rank(x, 4);
  auto kernel = c.pair("kernel"), stride = c.pair("stride"), padding = c.pair("padding");
  c.positive(kernel, "kernel");
  c.positive(stride, "stride");
  c.non_negative(padding, "padding");
  if (kernel[0] * kernel[1] > kMaxWindowTaps) c.fail("a kernel of " + shape_str(kernel) + " overflows the int32 window sums");
  const bool ceil_mode = c.n.int_attr("ceil_mode") != 0;
  c.n.int_attr("count_include_pad");
  if (c.n.int_attr("divisor_override") < 0) c.fail("divisor_override must be >= 0 (0: none)");
  Shape out{x.shape[0], x.shape[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (2 * padding[i] > kernel[i]) c.fail("padding must be at most half the kernel");
    out[2 + i] = window_output_size(x.shape[2 + i], kernel[i], stride[i], padding[i], 1, ceil_mode);
    if (out[2 + i] < 1) c.fail("kernel larger than padded input " + shape_str(x.shape));
  }
  return out;
}

Shape avg_pool2d_rule(const Checker& c, const Value&) {
  c.quantized(c.in(0));
  float_mean_flag(c);  // checks the flag is 0 or 1
  return avg_pool2d_shape(c);
}

// A divisor_override d scales PyTorch's count_include_pad average by kh * kw / d.
std::string avg_pool2d_expr(const Node& n, const std::string& x) {
  const auto& k = n.ints_attr("kernel");
  const int64_t divisor = n.int_attr("divisor_override");
  std::string pool = "R.nn.avg_pool2d(" + x + ", pool_size=" + int_list(k) + ", strides=" + int_list(n.ints_attr("stride")) +
                     ", padding=" + padding4(n.ints_attr("padding")) + ", ceil_mode=" + bool_literal(n.int_attr("ceil_mode")) +
                     ", count_include_pad=" + bool_literal(n.int_attr("count_include_pad") || divisor) + ")";
  if (!divisor) return pool;
  return "R.multiply(" + pool + ", " + float_const(static_cast<float>(k[0] * k[1]) / static_cast<float>(divisor)) + ")";
}

void avg_pool2d_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return avg_pool2d_expr(n, x); });
}

// float_max_pool2d / float_avg_pool2d: the same attributes and windows on float32 tensors.
Shape float_max_pool2d_rule(const Checker& c, const Value& out) {
  c.dtype(c.in(0), DType::Float32);
  c.dtype(out, DType::Float32);
  return max_pool2d_shape(c);
}

Shape float_avg_pool2d_rule(const Checker& c, const Value& out) {
  c.dtype(c.in(0), DType::Float32);
  c.dtype(out, DType::Float32);
  return avg_pool2d_shape(c);
}

void float_max_pool2d_emit(Emitter& e, const Node& n) { e.line(e.out_name(n), max_pool2d_expr(n, e.in_name(n, 0))); }
void float_avg_pool2d_emit(Emitter& e, const Node& n) { e.line(e.out_name(n), avg_pool2d_expr(n, e.in_name(n, 0))); }

// Mean over the spatial axes (2, 3) of a 4-D tensor.
Shape mean_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  if (c.n.ints_attr("axes") != std::vector<int64_t>{2, 3}) c.fail("only the mean over axes [2, 3] is supported");
  float_mean_flag(c);  // checks the flag is 0 or 1
  if (c.n.int_attr("keepdim")) return {x.shape[0], x.shape[1], 1, 1};
  return {x.shape[0], x.shape[1]};
}

void mean_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return "R.mean(" + x + ", axis=[2, 3], keepdims=" + bool_literal(n.int_attr("keepdim")) + ")"; });
}

}  // namespace

std::vector<OpDef> pool_ops() {
  return {
      {"max_pool2d", OpKind::QParamPreserving, max_pool2d_rule, max_pool2d_emit, function_runner<run_max_pool2d>},
      {"avg_pool2d", OpKind::QParamPreserving, avg_pool2d_rule, avg_pool2d_emit, function_runner<run_avg_pool2d>},
      {"float_max_pool2d", OpKind::Float, float_max_pool2d_rule, float_max_pool2d_emit, function_runner<run_float_max_pool2d>},
      {"float_avg_pool2d", OpKind::Float, float_avg_pool2d_rule, float_avg_pool2d_emit, function_runner<run_float_avg_pool2d>},
      {"adaptive_avg_pool2d", OpKind::QParamPreserving, adaptive_avg_pool2d_rule, adaptive_avg_pool2d_emit,
       function_runner<run_adaptive_avg_pool2d>},
      {"mean", OpKind::QParamPreserving, mean_rule, mean_emit, function_runner<run_mean>},
  };
}

}  // namespace qnnpy
