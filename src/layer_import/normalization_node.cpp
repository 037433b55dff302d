#include "layer_import/normalization_node.h"

#include <cstring>
#include <stdexcept>

namespace qnnpy {
namespace {

Param float_param(const std::string& name, const Shape& shape, const std::vector<float>& values) {
  Param p;
  p.name = name;
  p.dtype = DType::Float32;
  p.shape = shape;
  p.bytes.resize(values.size() * sizeof(float));
  std::memcpy(p.bytes.data(), values.data(), p.bytes.size());
  return p;
}

}  // namespace

int add_normalization_node(Graph& g, Node node, const Shape& shape, const std::vector<float>& weight,
                           const std::vector<float>& bias, Value output, const Shape& expected_shape) {
  const auto count = static_cast<size_t>(num_elements(shape));
  if (weight.size() != count || bias.size() != count) {
    throw std::invalid_argument(node.op + " (" + node.source + "): weight and bias must hold " + std::to_string(count) +
                                " values (shape " + shape_str(shape) + "), got " + std::to_string(weight.size()) +
                                " and " + std::to_string(bias.size()));
  }
  node.params["norm_weight"] = g.add_param(float_param(g.unique_name(output.name + "_weight"), shape, weight));
  node.params["norm_bias"] = g.add_param(float_param(g.unique_name(output.name + "_bias"), shape, bias));
  return g.add_node(std::move(node), std::move(output), expected_shape);
}

}  // namespace qnnpy
