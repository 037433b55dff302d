// What an op's rule sees: the graph and the node being checked, with the checks
// most rules share. Every failure names the op and the node's source.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace qnnpy {

struct Checker {
  const Graph& g;
  const Node& n;

  [[noreturn]] void fail(const std::string& msg) const;
  void inputs(size_t count) const;
  // Input i; a node with fewer inputs is refused (rules may read an input before they count them).
  const Value& in(size_t i) const {
    if (i >= n.inputs.size()) fail("expects at least " + std::to_string(i + 1) + " input(s), got " + std::to_string(n.inputs.size()));
    return g.value(n.inputs[i]);
  }
  // The node's param of `role`; a float32 one must hold finite values (constants, which may hold
  // infinities, read theirs through the graph).
  const Param& param(const std::string& role) const;
  void quantized(const Value& v) const;
  // Quantized with one scale and zero point (the input of a weighted layer).
  void quantized_per_tensor(const Value& v) const;
  void rank(const Value& v, size_t r) const;
  std::vector<int64_t> pair(const std::string& key) const;
  // The int attribute `key`, which must hold `count` values (one per spatial axis).
  std::vector<int64_t> per_axis(const std::string& key, size_t count) const;
  void positive(const std::vector<int64_t>& v, const std::string& key) const;
  void non_negative(const std::vector<int64_t>& v, const std::string& key) const;
  // The length of the int32 reductions of a weighted layer, refused past kMaxReductionLength (ir/limits.h).
  void reduction_length(int64_t length) const;
  // An NCHW input with `padding` (top/bottom, left/right) added, one image as the conv runners
  // pad it: its element count must stay within the limits of ir/limits.h (a small input with a
  // huge padding would otherwise allocate gigabytes).
  void padded_image(const Shape& x, const std::vector<int64_t>& padding) const;
  // NumPy broadcasting of two shapes (PyTorch's rule for binary ops); fails when they do not broadcast.
  Shape broadcast(const Shape& a, const Shape& b) const;
  // A possibly negative axis attribute, normalized against `rank`.
  int64_t axis(const std::string& key, size_t rank) const;
  // A list attribute of distinct, possibly negative axes, normalized against `rank`.
  std::vector<int64_t> axes(const std::string& key, size_t rank) const;
  // Value `v` (an input, or the output) must have dtype `t`.
  void dtype(const Value& v, DType t) const;
  // Every input has the dtype of input 0 (from input `first` on); returns it.
  DType same_dtype(size_t first = 0) const;
  // float32 or an integer dtype (int64 / int32): what arithmetic takes.
  void numeric(const Value& v) const;
  // An index tensor: int64 or int32.
  void indices(const Value& v) const;
};

// Output extent of a sliding window (arguments bounded by kMaxExtent, so no overflow), PyTorch's formula (ceil_mode as in pooling).
int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode);

// The output shape of a concatenation of the node's inputs along attribute "axis": at least one
// input, equal ranks, equal extents outside the axis (cat, float_cat).
Shape concat_shape(const Checker& c);

// The rule of float ops of one input whose shape the output keeps.
Shape float_unary_rule(const Checker& c, const Value& out);

// The rule of ops with one quantized input whose output has the input's shape.
Shape same_shape_unary(const Checker& c, const Value& out);

}  // namespace qnnpy
