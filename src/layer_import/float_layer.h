// Builds a float_conv2d / float_linear node (src/ops/float_ops.cpp): the int8 weight as it
// is, with its qparams, and the float bias kept float (param "bias_float", a float32
// Relax parameter): the op runs in float32.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "layer_import/layer_params.h"

namespace qnnpy {

int add_float_layer_node(Graph& g, const std::string& op, int input, const std::string& source, const std::string& name,
                         const WeightView& weight, const float* bias, std::map<std::string, std::vector<int64_t>> ints,
                         const Shape& expected_shape);

}  // namespace qnnpy
