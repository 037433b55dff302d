#include "layer_import/affine_node.h"

#include <cstring>
#include <stdexcept>
#include <utility>

namespace qnnpy {
namespace {

int add_bytes_param(Graph& g, const std::string& name, DType dtype, const Shape& shape, const void* data, size_t bytes) {
  Param p;
  p.name = g.unique_name(name);
  p.dtype = dtype;
  p.shape = shape;
  p.bytes.resize(bytes);
  std::memcpy(p.bytes.data(), data, bytes);
  return g.add_param(std::move(p));
}

}  // namespace

int add_affine_node(Graph& g, const AffineLayer& layer) {
  const int64_t n = layer.rows, k = layer.cols;
  if (layer.group_size < 1 || k % layer.group_size != 0) {
    throw std::invalid_argument(layer.op + " (" + layer.source + "): group_size " + std::to_string(layer.group_size) +
                                " does not divide the " + std::to_string(k) + " columns");
  }
  const int64_t groups = n * (k / layer.group_size);
  Node node;
  node.op = layer.op;
  node.source = layer.source;
  node.inputs = {layer.input};
  node.ints = layer.ints;
  node.ints["group_size"] = {layer.group_size};
  node.ints["weight_bits"] = {layer.weight_bits};
  node.params["weight"] = add_bytes_param(g, layer.name + "_weight", DType::Int8, {n, k}, layer.weight, static_cast<size_t>(n * k));
  node.params["weight_scale"] = add_bytes_param(g, layer.name + "_weight_scale", DType::Float32, {groups}, layer.weight_scale,
                                                static_cast<size_t>(groups) * sizeof(float));
  node.params["weight_zero_point"] = add_bytes_param(g, layer.name + "_weight_zero_point", DType::Int8, {groups},
                                                     layer.weight_zero_point, static_cast<size_t>(groups));
  if (layer.weight_offset) {
    node.params["weight_offset"] = add_bytes_param(g, layer.name + "_weight_offset", DType::Float32, {groups}, layer.weight_offset,
                                                   static_cast<size_t>(groups) * sizeof(float));
  }
  if (layer.bias) {
    node.params["bias"] = add_bytes_param(g, layer.name + "_bias", DType::Float32, {n}, layer.bias, static_cast<size_t>(n) * sizeof(float));
  }
  Value out;
  out.name = layer.name;
  out.dtype = DType::Float32;
  return g.add_node(std::move(node), std::move(out), layer.expected_shape);
}

}  // namespace qnnpy
