#include "ir/op_rules.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace qnnpy {
namespace {

struct Checker {
  const Graph& g;
  const Node& n;

  [[noreturn]] void fail(const std::string& msg) const {
    throw std::invalid_argument(n.op + " (" + n.source + "): " + msg);
  }
  void inputs(size_t count) const {
    if (n.inputs.size() != count) {
      fail("expects " + std::to_string(count) + " input(s), got " + std::to_string(n.inputs.size()));
    }
  }
  const Value& in(size_t i) const { return g.value(n.inputs.at(i)); }
  void quantized(const Value& v) const {
    if (v.dtype == DType::Float32 || v.q.empty()) fail("input '" + v.name + "' must be a quantized tensor");
  }
  void rank(const Value& v, size_t r) const {
    if (v.shape.size() != r) fail("input '" + v.name + "' must have rank " + std::to_string(r) + ", has shape " + shape_str(v.shape));
  }
  std::vector<int64_t> pair(const std::string& key) const {
    const auto& v = n.ints_attr(key);
    if (v.size() != 2) fail("attribute '" + key + "' must hold 2 values");
    return v;
  }
  void positive(const std::vector<int64_t>& v, const std::string& key) const {
    for (int64_t x : v) if (x < 1) fail("attribute '" + key + "' must be >= 1, got " + std::to_string(x));
  }
};

void check_output_qparams(const Checker& c, const Value& out) {
  if (out.dtype == DType::Float32) c.fail("output must be an integer dtype");
  if (out.q.scale.size() != 1 || out.q.zero_point.size() != 1) c.fail("output needs per-tensor scale and zero point");
  if (!(out.q.scale[0] > 0.0f)) c.fail("output scale must be positive, got " + std::to_string(out.q.scale[0]));
  int32_t zp = out.q.zero_point[0];
  if (zp < dtype_min(out.dtype) || zp > dtype_max(out.dtype)) {
    c.fail("output zero point " + std::to_string(zp) + " outside the range of " + dtype_name(out.dtype));
  }
}

Shape conv2d(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  const Param& w = c.g.node_param(c.n, "weight");
  if (w.dtype != DType::Int8 || w.shape.size() != 4) c.fail("weight must be int8 OIHW, got " + shape_str(w.shape));
  auto stride = c.pair("stride"), padding = c.pair("padding"), dilation = c.pair("dilation");
  c.positive(stride, "stride");
  c.positive(dilation, "dilation");
  int64_t groups = c.n.int_attr("groups");
  if (groups < 1 || x.shape[1] % groups || w.shape[0] % groups) {
    c.fail("groups=" + std::to_string(groups) + " must divide input channels " + std::to_string(x.shape[1]) +
           " and output channels " + std::to_string(w.shape[0]));
  }
  if (w.shape[1] * groups != x.shape[1]) {
    c.fail("weight " + shape_str(w.shape) + " does not fit input " + shape_str(x.shape) + " with groups=" + std::to_string(groups));
  }
  Shape out{x.shape[0], w.shape[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = window_output_size(x.shape[2 + i], w.shape[2 + i], stride[i], padding[i], dilation[i], false);
    if (out[2 + i] < 1) c.fail("kernel larger than padded input " + shape_str(x.shape));
  }
  return out;
}

// PyTorch's ConvTranspose2d: weight (in, out / groups, kh, kw);
// out = (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.
Shape conv_transpose2d(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  const Param& w = c.g.node_param(c.n, "weight");
  if (w.dtype != DType::Int8 || w.shape.size() != 4) c.fail("weight must be int8 (in, out/groups, kh, kw)");
  auto stride = c.pair("stride"), padding = c.pair("padding"), dilation = c.pair("dilation");
  auto output_padding = c.pair("output_padding");
  c.positive(stride, "stride");
  c.positive(dilation, "dilation");
  const int64_t groups = c.n.int_attr("groups");
  if (groups < 1 || w.shape[0] != x.shape[1] || x.shape[1] % groups) {
    c.fail("weight " + shape_str(w.shape) + " does not fit input " + shape_str(x.shape) + " with groups=" + std::to_string(groups));
  }
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

Shape linear(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  const Param& w = c.g.node_param(c.n, "weight");
  if (w.dtype != DType::Int8 || w.shape.size() != 2) c.fail("weight must be int8 (out, in), got " + shape_str(w.shape));
  if (x.shape.empty() || x.shape.back() != w.shape[1]) {
    c.fail("input " + shape_str(x.shape) + " does not match weight " + shape_str(w.shape));
  }
  Shape out = x.shape;
  out.back() = w.shape[0];
  return out;
}

Shape elementwise_binary(const Checker& c, const Value&) {
  c.inputs(2);
  c.quantized(c.in(0));
  c.quantized(c.in(1));
  if (c.in(0).shape != c.in(1).shape) {
    c.fail("input shapes differ: " + shape_str(c.in(0).shape) + " vs " + shape_str(c.in(1).shape));
  }
  return c.in(0).shape;
}

Shape unary(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  return c.in(0).shape;
}

Shape quantize(const Checker& c, const Value&) {
  c.inputs(1);
  if (c.in(0).dtype != DType::Float32) c.fail("input must be float32");
  return c.in(0).shape;
}

Shape max_pool2d(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  auto kernel = c.pair("kernel"), stride = c.pair("stride"), padding = c.pair("padding"), dilation = c.pair("dilation");
  c.positive(kernel, "kernel");
  c.positive(stride, "stride");
  c.positive(dilation, "dilation");
  bool ceil_mode = c.n.int_attr("ceil_mode") != 0;
  Shape out{x.shape[0], x.shape[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (2 * padding[i] > kernel[i]) c.fail("padding must be at most half the kernel");
    out[2 + i] = window_output_size(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode);
  }
  return out;
}

Shape adaptive_avg_pool2d(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  auto size = c.pair("output_size");
  c.positive(size, "output_size");
  return {x.shape[0], x.shape[1], size[0], size[1]};
}

Shape reshape(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  const auto& shape = c.n.ints_attr("shape");
  if (num_elements(shape) != num_elements(c.in(0).shape)) {
    c.fail("cannot reshape " + shape_str(c.in(0).shape) + " to " + shape_str(shape));
  }
  return shape;
}

// NumPy broadcasting of two shapes (PyTorch's rule for binary ops).
Shape broadcast(const Checker& c, const Value&) {
  c.inputs(2);
  c.quantized(c.in(0));
  c.quantized(c.in(1));
  const Shape &a = c.in(0).shape, &b = c.in(1).shape;
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) c.fail("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Normalizes a possibly negative axis attribute against `rank`.
int64_t axis_attr(const Checker& c, const std::string& key, size_t rank) {
  int64_t axis = c.n.int_attr(key);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (axis < 0 || axis >= static_cast<int64_t>(rank)) c.fail("attribute '" + key + "' out of range for rank " + std::to_string(rank));
  return axis;
}

Shape cat(const Checker& c, const Value& out) {
  if (c.n.inputs.empty()) c.fail("expects at least one input");
  const Value& x0 = c.in(0);
  const int64_t axis = axis_attr(c, "axis", x0.shape.size());
  Shape shape = x0.shape;
  shape[axis] = 0;
  for (size_t i = 0; i < c.n.inputs.size(); ++i) {
    const Value& x = c.in(i);
    c.quantized(x);
    if (x.dtype != out.dtype) c.fail("input '" + x.name + "' has dtype " + dtype_name(x.dtype) + ", output " + dtype_name(out.dtype));
    if (x.shape.size() != x0.shape.size()) c.fail("inputs differ in rank");
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (static_cast<int64_t>(d) != axis && x.shape[d] != x0.shape[d]) {
        c.fail("input shapes " + shape_str(x0.shape) + " and " + shape_str(x.shape) + " differ outside axis " + std::to_string(axis));
      }
    }
    shape[axis] += x.shape[axis];
  }
  return shape;
}

Shape avg_pool2d(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  auto kernel = c.pair("kernel"), stride = c.pair("stride"), padding = c.pair("padding");
  c.positive(kernel, "kernel");
  c.positive(stride, "stride");
  const bool ceil_mode = c.n.int_attr("ceil_mode") != 0;
  c.n.int_attr("count_include_pad");
  if (c.n.int_attr("divisor_override") < 0) c.fail("divisor_override must be >= 0 (0: none)");
  Shape out{x.shape[0], x.shape[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (2 * padding[i] > kernel[i]) c.fail("padding must be at most half the kernel");
    out[2 + i] = window_output_size(x.shape[2 + i], kernel[i], stride[i], padding[i], 1, ceil_mode);
  }
  return out;
}

Shape permute(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  const Shape& x = c.in(0).shape;
  const auto& perm = c.n.ints_attr("perm");
  if (perm.size() != x.size()) c.fail("perm " + shape_str(perm) + " does not match rank " + std::to_string(x.size()));
  Shape out(x.size());
  std::vector<bool> seen(x.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(x.size()) || seen[perm[i]]) c.fail("perm " + shape_str(perm) + " is not a permutation");
    seen[perm[i]] = true;
    out[i] = x[perm[i]];
  }
  return out;
}

Shape slice(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  Shape out = c.in(0).shape;
  const int64_t axis = axis_attr(c, "axis", out.size());
  const int64_t begin = c.n.int_attr("begin"), end = c.n.int_attr("end");
  if (begin < 0 || end > out[axis] || begin >= end) {
    c.fail("range [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside axis of size " + std::to_string(out[axis]));
  }
  out[axis] = end - begin;
  return out;
}

// Like adaptive_avg_pool2d, the output size is an attribute; PyTorch's scale factors (0: none) pick the source pixels.
Shape upsample_nearest2d(const Checker& c, const Value& out) {
  c.n.float_attr("scale_h");
  c.n.float_attr("scale_w");
  return adaptive_avg_pool2d(c, out);
}

// Mean over the spatial axes (2, 3) of a 4-D tensor.
Shape mean(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  if (c.n.ints_attr("axes") != std::vector<int64_t>{2, 3}) c.fail("only the mean over axes [2, 3] is supported");
  if (c.n.int_attr("keepdim")) return {x.shape[0], x.shape[1], 1, 1};
  return {x.shape[0], x.shape[1]};
}

Shape batch_norm2d(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.quantized(x);
  c.rank(x, 4);
  for (const char* role : {"bn_weight", "bn_bias", "bn_running_mean", "bn_running_var"}) {
    const Param& p = c.g.node_param(c.n, role);
    if (p.dtype != DType::Float32 || p.shape != Shape{x.shape[1]}) c.fail(std::string(role) + " must be float32 (C,)");
  }
  if (!(c.n.float_attr("eps") >= 0.0)) c.fail("eps must be >= 0");
  return x.shape;
}

using Rule = std::function<Shape(const Checker&, const Value&)>;

// A unary op that needs the given float attributes.
Rule unary_with(std::vector<std::string> float_keys) {
  return [keys = std::move(float_keys)](const Checker& c, const Value& out) {
    for (const auto& key : keys) c.n.float_attr(key);
    return unary(c, out);
  };
}

// Ops whose output carries new quantization parameters.
const std::map<std::string, Rule>& requantizing_ops() {
  static const std::map<std::string, Rule> rules = {
      {"quantize", quantize},
      {"conv2d", conv2d},
      {"conv_transpose2d", conv_transpose2d},
      {"linear", linear},
      {"add", elementwise_binary},
      {"mul", broadcast},
      {"add_scalar", unary_with(std::vector<std::string>{"scalar"})},
      {"mul_scalar", unary_with(std::vector<std::string>{"scalar"})},
      {"cat", cat},
      {"batch_norm2d", batch_norm2d},
      {"hardswish", unary},
      {"hardsigmoid", unary},
      {"sigmoid", unary},
      {"leaky_relu", unary_with(std::vector<std::string>{"alpha"})},
      {"clamp", unary_with(std::vector<std::string>{"min", "max"})},
  };
  return rules;
}

// Ops that move or select values: the output keeps the input's qparams.
const std::map<std::string, Rule>& qparam_preserving_ops() {
  static const std::map<std::string, Rule> rules = {
      {"relu", unary},
      {"max_pool2d", max_pool2d},
      {"adaptive_avg_pool2d", adaptive_avg_pool2d},
      {"reshape", reshape},
      {"avg_pool2d", avg_pool2d},
      {"permute", permute},
      {"slice", slice},
      {"upsample_nearest2d", upsample_nearest2d},
      {"mean", mean},
  };
  return rules;
}

}  // namespace

int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode) {
  int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // PyTorch: the last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

Shape infer_output(const Graph& g, const Node& node, const Value& output) {
  Checker c{g, node};
  if (node.op == "dequantize") {
    c.inputs(1);
    c.quantized(c.in(0));
    if (output.dtype != DType::Float32) c.fail("output must be float32");
    return c.in(0).shape;
  }
  auto it = requantizing_ops().find(node.op);
  if (it != requantizing_ops().end()) {
    check_output_qparams(c, output);
    return it->second(c, output);
  }
  it = qparam_preserving_ops().find(node.op);
  if (it != qparam_preserving_ops().end()) {
    Shape shape = it->second(c, output);
    const Value& x = c.in(0);
    if (output.dtype != x.dtype || output.q.scale != x.q.scale || output.q.zero_point != x.q.zero_point) {
      c.fail("output must keep the input's dtype and quantization parameters");
    }
    return shape;
  }
  c.fail("unknown op");
}

}  // namespace qnnpy
