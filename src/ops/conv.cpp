// The weighted ops: conv2d, conv3d, conv_transpose2d and linear. Their nodes hold an int8
// weight and optionally an int32 bias (scale s_in * s_w) with its float copy
// (params "weight", "bias", "bias_float"); the fused relu is the int "relu".
#include <algorithm>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/conv3d.h"
#include "runtime/conv_runner.h"
#include "runtime/conv_transpose.h"

namespace qnnpy {
namespace {

// The weight's quantization: per tensor, or per output channel along axis 0.
void check_weight_qparams(const Checker& c, const Param& w) {
  const QParams& q = w.q;
  if (q.scale.size() != q.zero_point.size()) c.fail("weight scale and zero point counts differ");
  if (q.per_channel() && q.axis != 0) {
    c.fail("weight is quantized per channel along axis " + std::to_string(q.axis) + "; only axis 0 is supported");
  }
  const size_t count = q.per_channel() ? static_cast<size_t>(w.shape[0]) : 1;
  if (q.scale.size() != count) {
    c.fail("weight has " + std::to_string(q.scale.size()) + " scale(s), expected " + std::to_string(count));
  }
}

// The bias, when present: int32, one per output channel, quantized like the weight,
// with its float32 copy (the fbgemm profile adds PyTorch's float bias).
void check_bias(const Checker& c, const Param& w, int64_t channels) {
  if (!c.n.has_param("bias")) {
    if (c.n.has_param("bias_float")) c.fail("has param 'bias_float' without 'bias'");
    return;
  }
  const Param& b = c.param("bias");
  if (b.dtype != DType::Int32 || b.shape != Shape{channels}) {
    c.fail("bias must be int32 with one value per output channel " + shape_str({channels}) + ", got " +
           dtype_name(b.dtype) + " " + shape_str(b.shape));
  }
  if (b.q.scale.size() != w.q.scale.size() || b.q.zero_point.size() != b.q.scale.size() ||
      b.q.per_channel() != w.q.per_channel()) {
    c.fail("bias must be quantized like the weight (per tensor or per output channel)");
  }
  const Param& bf = c.param("bias_float");
  if (bf.dtype != DType::Float32 || bf.shape != b.shape) c.fail("bias_float must be float32 " + shape_str(b.shape));
}

// conv2d (NCHW input, OIHW weight) and PyTorch's quantized Conv3d (NCDHW, OIDHW; it runs as a conv2d whose
// channels are the depth taps of the input channels, src/runtime/conv3d.h): `spatial` axes of each.
Shape conv_rule(const Checker& c, size_t spatial) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized_per_tensor(x);
  c.rank(x, spatial + 2);
  const Param& w = c.param("weight");
  if (w.dtype != DType::Int8 || w.shape.size() != spatial + 2) {
    c.fail(std::string("weight must be int8 ") + (spatial == 2 ? "OIHW" : "OIDHW") + ", got " + shape_str(w.shape));
  }
  check_weight_qparams(c, w);
  auto stride = c.per_axis("stride", spatial), padding = c.per_axis("padding", spatial),
       dilation = c.per_axis("dilation", spatial);
  c.positive(stride, "stride");
  c.positive(dilation, "dilation");
  c.non_negative(padding, "padding");
  // The 2-D image the conv2d pads: its channels are a conv3d's input channels times its depth taps.
  const int64_t image_channels = x.shape[1] * (spatial == 3 ? w.shape[2] : 1);
  checked_num_elements({image_channels, x.shape[spatial] + 2 * padding[spatial - 2],
                        x.shape[spatial + 1] + 2 * padding[spatial - 1]},
                       c.n.op + " (" + c.n.source + "): padded input image");
  int64_t reduction = 1;
  for (size_t i = 1; i < w.shape.size(); ++i) reduction *= w.shape[i];
  c.reduction_length(reduction);
  const int64_t groups = c.n.int_attr("groups");
  if (groups < 1 || x.shape[1] % groups || w.shape[0] % groups) {
    c.fail("groups=" + std::to_string(groups) + " must divide input channels " + std::to_string(x.shape[1]) +
           " and output channels " + std::to_string(w.shape[0]));
  }
  if (w.shape[1] * groups != x.shape[1]) {
    c.fail("weight " + shape_str(w.shape) + " does not fit input " + shape_str(x.shape) + " with groups=" + std::to_string(groups));
  }
  check_bias(c, w, w.shape[0]);
  Shape out{x.shape[0], w.shape[0]};
  for (size_t i = 0; i < spatial; ++i) {
    out.push_back(window_output_size(x.shape[2 + i], w.shape[2 + i], stride[i], padding[i], dilation[i], false));
    if (out.back() < 1) c.fail("kernel larger than padded input " + shape_str(x.shape));
  }
  return out;
}

Shape conv2d_rule(const Checker& c, const Value&) { return conv_rule(c, 2); }
Shape conv3d_rule(const Checker& c, const Value&) { return conv_rule(c, 3); }

// PyTorch's ConvTranspose2d: weight (in, out / groups, kh, kw), per tensor;
// out = (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.
Shape conv_transpose2d_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized_per_tensor(x);
  c.rank(x, 4);
  const Param& w = c.param("weight");
  if (w.dtype != DType::Int8 || w.shape.size() != 4) c.fail("weight must be int8 (in, out/groups, kh, kw)");
  check_weight_qparams(c, w);
  if (w.q.per_channel()) c.fail("per-channel weights of a transposed conv are not supported (PyTorch does not produce them either)");
  auto stride = c.pair("stride"), padding = c.pair("padding"), dilation = c.pair("dilation");
  auto output_padding = c.pair("output_padding");
  c.positive(stride, "stride");
  c.positive(dilation, "dilation");
  c.non_negative(padding, "padding");
  const int64_t groups = c.n.int_attr("groups");
  if (groups < 1 || w.shape[0] != x.shape[1] || x.shape[1] % groups) {
    c.fail("weight " + shape_str(w.shape) + " does not fit input " + shape_str(x.shape) + " with groups=" + std::to_string(groups));
  }
  // It runs as a conv2d over the spread input: (in / groups) * kh * kw products per output.
  c.reduction_length(x.shape[1] / groups * w.shape[2] * w.shape[3]);
  check_bias(c, w, w.shape[1] * groups);
  Shape out{x.shape[0], w.shape[1] * groups, 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (output_padding[i] < 0 || output_padding[i] >= std::max(stride[i], dilation[i])) {
      c.fail("output_padding must be smaller than stride or dilation");
    }
    out[2 + i] = (x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w.shape[2 + i] - 1) + output_padding[i] + 1;
    if (out[2 + i] < 1) c.fail("output would be empty for input " + shape_str(x.shape));
  }
  return out;
}

Shape linear_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized_per_tensor(x);
  const Param& w = c.param("weight");
  if (w.dtype != DType::Int8 || w.shape.size() != 2) c.fail("weight must be int8 (out, in), got " + shape_str(w.shape));
  check_weight_qparams(c, w);
  if (x.shape.empty() || x.shape.back() != w.shape[1]) {
    c.fail("input " + shape_str(x.shape) + " does not match weight " + shape_str(w.shape));
  }
  c.reduction_length(w.shape[1]);
  check_bias(c, w, w.shape[0]);
  Shape out = x.shape;
  out.back() = w.shape[0];
  return out;
}

// R.nn.conv2d / R.nn.conv2d_transpose on the dequantized input and weight, then bias and relu.
void emit_conv(Emitter& e, const Node& n, bool transposed) {
  const std::string& o = e.out_name(n);
  const std::string x = e.input(n, 0, "x");
  const std::string w = e.param(e.graph().node_param(n, "weight"), o + "_w");
  const std::string extra = transposed ? ", output_padding=" + int_list(n.ints_attr("output_padding")) : "";
  const std::string y = e.emit(o + (transposed ? "_deconv" : "_conv"),
                               (transposed ? "R.nn.conv2d_transpose(" : "R.nn.conv2d(") + x + ", " + w +
                                   ", strides=" + int_list(n.ints_attr("stride")) + ", padding=" +
                                   padding4(n.ints_attr("padding")) + extra + ", dilation=" +
                                   int_list(n.ints_attr("dilation")) + ", groups=" + std::to_string(n.int_attr("groups")) + ")");
  e.quantize_output(n, e.bias_and_relu(n, y, 4));
}

void conv2d_emit(Emitter& e, const Node& n) { emit_conv(e, n, false); }

// R.nn.conv3d on the dequantized input and weight, then the bias (as (1, C, 1, 1, 1)) and relu.
void conv3d_emit(Emitter& e, const Node& n) {
  const std::string& o = e.out_name(n);
  const std::string x = e.input(n, 0, "x");
  const std::string w = e.param(e.graph().node_param(n, "weight"), o + "_w");
  const auto& p = n.ints_attr("padding");
  std::string y = e.emit(o + "_conv", "R.nn.conv3d(" + x + ", " + w + ", strides=" + int_list(n.ints_attr("stride")) +
                                          ", padding=" + int_list({p[0], p[1], p[2], p[0], p[1], p[2]}) + ", dilation=" +
                                          int_list(n.ints_attr("dilation")) + ", groups=" +
                                          std::to_string(n.int_attr("groups")) + ")");
  if (n.has_param("bias")) {
    const Param& b = e.graph().node_param(n, "bias");
    const std::string bias = e.emit(o + "_bias_ncdhw", "R.reshape(" + e.param(b, o + "_bias") + ", R.shape([1, " +
                                                           std::to_string(b.shape[0]) + ", 1, 1, 1]))");
    y = e.emit(o + "_biased", "R.add(" + y + ", " + bias + ")");
  }
  if (n.int_attr("relu")) y = e.emit(o + "_relu", "R.nn.relu(" + y + ")");
  e.quantize_output(n, y);
}
void conv_transpose2d_emit(Emitter& e, const Node& n) { emit_conv(e, n, true); }

void linear_emit(Emitter& e, const Node& n) {
  const std::string& o = e.out_name(n);
  const std::string x = e.input(n, 0, "x");
  const std::string w = e.param(e.graph().node_param(n, "weight"), o + "_w");
  const std::string wt = e.emit(o + "_wt", "R.permute_dims(" + w + ", axes=[1, 0])");
  const std::string y = e.emit(o + "_matmul", "R.matmul(" + x + ", " + wt + ")");
  e.quantize_output(n, e.bias_and_relu(n, y, 2));
}

std::unique_ptr<PreparedOp> conv2d_runner(const Graph& g, const Node& n, Profile profile) {
  return std::make_unique<LayerRunner>(g, n, profile, true);
}

std::unique_ptr<PreparedOp> linear_runner(const Graph& g, const Node& n, Profile profile) {
  return std::make_unique<LayerRunner>(g, n, profile, false);
}

}  // namespace

std::vector<OpDef> conv_ops() {
  return {
      {"conv2d", OpKind::Requantizing, conv2d_rule, conv2d_emit, conv2d_runner},
      {"conv3d", OpKind::Requantizing, conv3d_rule, conv3d_emit, prepared_runner<Conv3dRunner>},
      {"conv_transpose2d", OpKind::Requantizing, conv_transpose2d_rule, conv_transpose2d_emit,
       prepared_runner<TransposedConv>},
      {"linear", OpKind::Requantizing, linear_rule, linear_emit, linear_runner},
  };
}

}  // namespace qnnpy
