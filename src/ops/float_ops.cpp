// Float ops: the parts of a model its quantizer left in float (PT2E's float islands
// between a dequantize and the next quantize, a float head). Inputs and output are
// float32 without qparams; float_conv2d / float_linear keep their weight as the PT2E graph
// holds it: int8 with its qparams (dequantized by the op as PyTorch's dequantize_per_channel
// does), or float32 when the quantizer left the layer unannotated; the bias is float32
// (param "bias_float"). float_clamp clips to ["min", "max"], float_adaptive_avg_pool2d pools to
// "output_size", float_grid_sample samples its first input at the points of its second. They are emitted as float Relax ops and run in float32 by the runtime
// (src/runtime/ops/float_*.cpp); the element-wise, movement, reduction and spatial float ops
// have files of their own (float_unary.cpp, float_binary.cpp, ...). An int8-weight
// float_conv2d / float_linear whose input is a dequantized 8-bit tensor also takes that tensor
// as a second input (layer_import/float_layer.cpp); the emission ignores it, the runtime
// accumulates on it in integers (runtime/ops/integer_float_layers.cpp).
#include <algorithm>
#include <string>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/float_runners.h"
#include "runtime/ops/float_spatial_runners.h"

namespace qnnpy {
namespace {

const Param& float_weight(const Checker& c, size_t rank) {
  const Param& w = c.param("weight");
  if ((w.dtype != DType::Int8 && w.dtype != DType::Float32) || w.shape.size() != rank) {
    c.fail("weight must be int8 or float32 of rank " + std::to_string(rank) + ", got " + dtype_name(w.dtype) + " " +
           shape_str(w.shape));
  }
  const size_t scales = w.dtype == DType::Float32 ? 0 : w.q.per_channel() ? static_cast<size_t>(w.shape[0]) : 1;
  if ((w.q.per_channel() && w.q.axis != 0) || w.q.scale.size() != scales || w.q.zero_point.size() != scales) {
    c.fail("an int8 weight must be quantized per tensor or per output channel (axis 0); a float32 one not at all");
  }
  if (c.n.has_param("bias_float")) {
    const Param& b = c.param("bias_float");
    if (b.dtype != DType::Float32 || b.shape != Shape{w.shape[0]}) {
      c.fail("bias_float must be float32 " + shape_str({w.shape[0]}) + ", got " + shape_str(b.shape));
    }
  }
  return w;
}

// The optional second input of float_conv2d / float_linear: the 8-bit tensor (one scale and
// zero point) the first input was dequantized from, for an int8 weight.
void quantized_source(const Checker& c, const Param& w, int64_t reduction) {
  if (c.n.inputs.size() == 1) return;
  c.inputs(2);
  const Value& q = c.in(1);
  c.quantized_per_tensor(q);
  if (q.shape != c.in(0).shape) c.fail("8-bit source " + shape_str(q.shape) + " differs from input " + shape_str(c.in(0).shape));
  if (w.dtype != DType::Int8) c.fail("an 8-bit source input needs an int8 weight");
  c.reduction_length(reduction);
}

Shape float_conv2d_rule(const Checker& c, const Value&) {
  const Value& x = c.in(0);
  c.rank(x, 4);
  const Param& w = float_weight(c, 4);
  quantized_source(c, w, w.shape[1] * w.shape[2] * w.shape[3]);
  auto stride = c.pair("stride"), padding = c.pair("padding"), dilation = c.pair("dilation");
  c.positive(stride, "stride");
  c.positive(dilation, "dilation");
  c.non_negative(padding, "padding");
  c.padded_image(x.shape, padding);
  const int64_t groups = c.n.int_attr("groups");
  if (groups < 1 || x.shape[1] % groups || w.shape[0] % groups || w.shape[1] * groups != x.shape[1]) {
    c.fail("weight " + shape_str(w.shape) + " does not fit input " + shape_str(x.shape) + " with groups=" + std::to_string(groups));
  }
  Shape out{x.shape[0], w.shape[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = window_output_size(x.shape[2 + i], w.shape[2 + i], stride[i], padding[i], dilation[i], false);
    if (out[2 + i] < 1) c.fail("kernel larger than padded input " + shape_str(x.shape));
  }
  return out;
}

Shape float_linear_rule(const Checker& c, const Value&) {
  const Value& x = c.in(0);
  const Param& w = float_weight(c, 2);
  quantized_source(c, w, w.shape[1]);
  if (x.shape.empty() || x.shape.back() != w.shape[1]) {
    c.fail("input " + shape_str(x.shape) + " does not end in the weight's " + std::to_string(w.shape[1]) + " features");
  }
  Shape out = x.shape;
  out.back() = w.shape[0];
  return out;
}

Shape float_clamp_rule(const Checker& c, const Value& out) {
  if (!(c.n.float_attr("min") <= c.n.float_attr("max"))) c.fail("min must not exceed max");
  return float_unary_rule(c, out);
}

Shape float_adaptive_avg_pool2d_rule(const Checker& c, const Value&) {
  c.inputs(1);
  c.rank(c.in(0), 4);
  const auto size = c.pair("output_size");
  c.positive(size, "output_size");
  return {c.in(0).shape[0], c.in(0).shape[1], size[0], size[1]};
}

// float_grid_sample: x (N, C, H, W) sampled at grid (N, H_out, W_out, 2), each point (x, y) in [-1, 1] (PyTorch's
// grid_sampler_2d): "mode" 0 bilinear / 1 nearest, "padding_mode" 0 zeros / 1 border / 2 reflection,
// "align_corners" 0 / 1.
Shape float_grid_sample_rule(const Checker& c, const Value&) {
  c.inputs(2);
  c.rank(c.in(0), 4);
  c.rank(c.in(1), 4);
  const Shape &x = c.in(0).shape, &grid = c.in(1).shape;
  if (grid[0] != x[0] || grid[3] != 2) {
    c.fail("grid must be (" + std::to_string(x[0]) + ", H_out, W_out, 2), got " + shape_str(grid));
  }
  const int64_t mode = c.n.int_attr("mode"), padding = c.n.int_attr("padding_mode"), align = c.n.int_attr("align_corners");
  if (mode < 0 || mode > 1) c.fail("mode must be 0 (bilinear) or 1 (nearest), got " + std::to_string(mode));
  if (padding < 0 || padding > 2) {
    c.fail("padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got " + std::to_string(padding));
  }
  if (align != 0 && align != 1) c.fail("align_corners must be 0 or 1, got " + std::to_string(align));
  return {x[0], x[1], grid[1], grid[2]};
}

// --- emission: float Relax ops on the float inputs -------------------------------

// The float bias, a float32 function parameter, added along axis 1 of a rank-`rank` result.
std::string add_float_bias(Emitter& e, const Node& n, std::string y, int rank) {
  if (!n.has_param("bias_float")) return y;
  const Param& b = e.graph().node_param(n, "bias_float");
  std::string bias = b.name;
  if (rank == 4) {
    bias = e.emit(e.out_name(n) + "_bias_nchw", "R.reshape(" + bias + ", R.shape([1, " + std::to_string(b.shape[0]) + ", 1, 1]))");
  }
  return e.emit(e.out_name(n) + "_biased", "R.add(" + y + ", " + bias + ")");
}

// The float weight: the float32 param itself, or the int8 one dequantized.
std::string float_weight(Emitter& e, const Node& n) {
  const Param& w = e.graph().node_param(n, "weight");
  return w.dtype == DType::Float32 ? w.name : e.param(w, e.out_name(n) + "_w");
}

void float_conv2d_emit(Emitter& e, const Node& n) {
  const std::string w = float_weight(e, n);
  const std::string y = e.emit(e.out_name(n) + "_conv",
                               "R.nn.conv2d(" + e.in_name(n, 0) + ", " + w + ", strides=" + int_list(n.ints_attr("stride")) +
                                   ", padding=" + padding4(n.ints_attr("padding")) + ", dilation=" +
                                   int_list(n.ints_attr("dilation")) + ", groups=" + std::to_string(n.int_attr("groups")) + ")");
  e.line(e.out_name(n), add_float_bias(e, n, y, 4));
}

void float_linear_emit(Emitter& e, const Node& n) {
  const std::string w = float_weight(e, n);
  const std::string y = e.emit(e.out_name(n) + "_mm", "R.matmul(" + e.in_name(n, 0) + ", R.permute_dims(" + w + "))");
  e.line(e.out_name(n), add_float_bias(e, n, y, 0));
}


void float_clamp_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.clip(" + e.in_name(n, 0) + ", " + float_literal(n.float_attr("min")) + ", " +
                            float_literal(n.float_attr("max")) + ")");
}


void float_adaptive_avg_pool2d_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.nn.adaptive_avg_pool2d(" + e.in_name(n, 0) + ", output_size=" + int_list(n.ints_attr("output_size")) + ")");
}

// Relax's grid_sample (TVM 0.27) takes the grid as (N, 2, H_out, W_out), whatever its docstring says (checked
// against PyTorch in tests/test_core_aten_ops.py): PyTorch's grid is permuted.
void float_grid_sample_emit(Emitter& e, const Node& n) {
  static const char* const kModes[] = {"bilinear", "nearest"};
  static const char* const kPaddings[] = {"zeros", "border", "reflection"};
  const std::string grid = e.emit(e.out_name(n) + "_grid", "R.permute_dims(" + e.in_name(n, 1) + ", [0, 3, 1, 2])");
  e.line(e.out_name(n), "R.image.grid_sample(" + e.in_name(n, 0) + ", " + grid + ", method=\"" +
                            kModes[n.int_attr("mode")] + "\", layout=\"NCHW\", padding_mode=\"" +
                            kPaddings[n.int_attr("padding_mode")] + "\", align_corners=" +
                            (n.int_attr("align_corners") ? "True" : "False") + ")");
}

}  // namespace

std::vector<OpDef> float_ops() {
  return {
      {"float_conv2d", OpKind::Float, float_conv2d_rule, float_conv2d_emit, prepared_runner<FloatConv2d>, nullptr, false,
       /*reads_quantized_source=*/true},
      {"float_linear", OpKind::Float, float_linear_rule, float_linear_emit, prepared_runner<FloatLinear>, nullptr, false,
       /*reads_quantized_source=*/true},
      {"float_clamp", OpKind::Float, float_clamp_rule, float_clamp_emit, function_runner<run_float_clamp>},
      {"float_adaptive_avg_pool2d", OpKind::Float, float_adaptive_avg_pool2d_rule, float_adaptive_avg_pool2d_emit,
       function_runner<run_float_adaptive_avg_pool2d>},
      {"float_grid_sample", OpKind::Float, float_grid_sample_rule, float_grid_sample_emit,
       function_runner<run_float_grid_sample>},
  };
}

}  // namespace qnnpy
