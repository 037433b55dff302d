// Per-op validation and shape inference for the graph IR.
#pragma once

#include "ir/graph.h"

namespace qnnpy {

// Checks inputs, params, attributes and dtypes of `node` and returns the
// output shape. Throws std::invalid_argument naming the op and its source.
Shape infer_output(const Graph& g, const Node& node, const Value& output);

// Output extent of a sliding window, PyTorch's formula (ceil_mode as in pooling).
int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode);

}  // namespace qnnpy
