#include "ir/op_rules.h"

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

using Rule = std::function<Shape(const Checker&, const Value&)>;

// Ops whose output carries new quantization parameters.
const std::map<std::string, Rule>& requantizing_ops() {
  static const std::map<std::string, Rule> rules = {
      {"quantize", quantize},
      {"conv2d", conv2d},
      {"linear", linear},
      {"add", elementwise_binary},
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
