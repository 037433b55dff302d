// Adds a normalization node (quantized_layer_norm, quantized_group_norm, float_layer_norm)
// with its float32 weight and bias params ("norm_weight", "norm_bias").
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace qnnpy {

// `node` holds op, source, the input and the attributes; `shape` is the shape of the
// weight and of the bias; the params are named from `output.name`.
int add_normalization_node(Graph& g, Node node, const Shape& shape, const std::vector<float>& weight,
                           const std::vector<float>& bias, Value output, const Shape& expected_shape);

}  // namespace qnnpy
