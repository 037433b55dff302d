#include "ops/checker.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ir/limits.h"

namespace qnnpy {

void Checker::fail(const std::string& msg) const { throw std::invalid_argument(n.op + " (" + n.source + "): " + msg); }

void Checker::inputs(size_t count) const {
  if (n.inputs.size() != count) fail("expects " + std::to_string(count) + " input(s), got " + std::to_string(n.inputs.size()));
}

const Param& Checker::param(const std::string& role) const {
  const Param& p = g.node_param(n, role);
  if (p.dtype == DType::Float32) {
    const float* f = p.data<float>();
    for (size_t i = 0; i < p.bytes.size() / sizeof(float); ++i) {
      if (!std::isfinite(f[i])) fail("param '" + p.name + "' holds " + std::to_string(f[i]) + " (not finite)");
    }
  }
  return p;
}

void Checker::quantized(const Value& v) const {
  if ((v.dtype != DType::UInt8 && v.dtype != DType::Int8) || v.q.empty()) {
    fail("input '" + v.name + "' must be a quantized uint8 or int8 tensor");
  }
}

void Checker::quantized_per_tensor(const Value& v) const {
  quantized(v);
  if (v.q.scale.size() != 1 || v.q.zero_point.size() != 1) fail("input '" + v.name + "' must be quantized per tensor");
}

void Checker::rank(const Value& v, size_t r) const {
  if (v.shape.size() != r) fail("input '" + v.name + "' must have rank " + std::to_string(r) + ", has shape " + shape_str(v.shape));
}

std::vector<int64_t> Checker::pair(const std::string& key) const { return per_axis(key, 2); }

std::vector<int64_t> Checker::per_axis(const std::string& key, size_t count) const {
  const auto& v = n.ints_attr(key);
  if (v.size() != count) fail("attribute '" + key + "' must hold " + std::to_string(count) + " values");
  return v;
}

void Checker::positive(const std::vector<int64_t>& v, const std::string& key) const {
  for (int64_t x : v) if (x < 1) fail("attribute '" + key + "' must be >= 1, got " + std::to_string(x));
}

void Checker::non_negative(const std::vector<int64_t>& v, const std::string& key) const {
  for (int64_t x : v) if (x < 0) fail("attribute '" + key + "' must be >= 0, got " + std::to_string(x));
}

void Checker::reduction_length(int64_t length) const {
  if (length > kMaxReductionLength) {
    fail("reduction over " + std::to_string(length) + " products exceeds the int32 accumulator limit of " +
         std::to_string(kMaxReductionLength) + " (ir/limits.h)");
  }
}

void Checker::padded_image(const Shape& x, const std::vector<int64_t>& padding) const {
  checked_num_elements({x[1], x[2] + 2 * padding[0], x[3] + 2 * padding[1]},
                       n.op + " (" + n.source + "): padded input image");
}

Shape Checker::broadcast(const Shape& a, const Shape& b) const {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) fail("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t Checker::axis(const std::string& key, size_t rank) const {
  int64_t axis = n.int_attr(key);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (axis < 0 || axis >= static_cast<int64_t>(rank)) fail("attribute '" + key + "' out of range for rank " + std::to_string(rank));
  return axis;
}

std::vector<int64_t> Checker::axes(const std::string& key, size_t rank) const {
  std::vector<int64_t> out;
  for (int64_t a : n.ints_attr(key)) {
    const int64_t axis = a < 0 ? a + static_cast<int64_t>(rank) : a;
    if (axis < 0 || axis >= static_cast<int64_t>(rank)) fail("attribute '" + key + "' holds axis " + std::to_string(a) +
                                                             ", out of range for rank " + std::to_string(rank));
    if (std::find(out.begin(), out.end(), axis) != out.end()) fail("attribute '" + key + "' names axis " + std::to_string(a) + " twice");
    out.push_back(axis);
  }
  return out;
}

void Checker::dtype(const Value& v, DType t) const {
  if (v.dtype != t) fail("'" + v.name + "' must be " + dtype_name(t) + ", got " + dtype_name(v.dtype));
}

DType Checker::same_dtype(size_t first) const {
  const DType t = in(first).dtype;
  for (size_t i = first + 1; i < n.inputs.size(); ++i) {
    if (in(i).dtype != t) fail("inputs differ in dtype (" + std::string(dtype_name(t)) + " and " + dtype_name(in(i).dtype) + ")");
  }
  return t;
}

void Checker::numeric(const Value& v) const {
  if (v.dtype != DType::Float32 && !is_index_dtype(v.dtype)) {
    fail("'" + v.name + "' must be float32, int64 or int32, got " + dtype_name(v.dtype));
  }
}

void Checker::indices(const Value& v) const {
  if (!is_index_dtype(v.dtype)) fail("indices '" + v.name + "' must be int64 or int32, got " + dtype_name(v.dtype));
}

int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  // Rounded toward minus infinity, as PyTorch's div_rtn: a dilated window longer than the padded input
  // (span < 0) gives no output even where the stride exceeds the shortfall (C++'s division would give 1).
  const int64_t numerator = ceil_mode ? span + stride - 1 : span;
  int64_t out = numerator / stride - (numerator % stride < 0 ? 1 : 0) + 1;
  // PyTorch: the last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

Shape concat_shape(const Checker& c) {
  if (c.n.inputs.empty()) c.fail("expects at least one input");
  const Value& x0 = c.in(0);
  const int64_t axis = c.axis("axis", x0.shape.size());
  Shape shape = x0.shape;
  shape[axis] = 0;
  for (size_t i = 0; i < c.n.inputs.size(); ++i) {
    const Value& x = c.in(i);
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

Shape float_unary_rule(const Checker& c, const Value&) {
  c.inputs(1);
  return c.in(0).shape;
}

Shape same_shape_unary(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  return c.in(0).shape;
}

}  // namespace qnnpy
