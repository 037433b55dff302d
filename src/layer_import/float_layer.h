// Builds a float_conv2d / float_linear node (src/ops/float_ops.cpp): the weight as it is
// (int8 with its qparams, or float32 without: `float_weight` non-null), and the float bias kept float (param "bias_float", a float32
// Relax parameter): the op runs in float32.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "layer_import/layer_params.h"

namespace qnnpy {

int add_float_layer_node(Graph& g, const std::string& op, int input, const std::string& source, const std::string& name,
                         const WeightView& weight, const float* float_weight, const float* bias, std::map<std::string, std::vector<int64_t>> ints,
                         const Shape& expected_shape);

}  // namespace qnnpy
