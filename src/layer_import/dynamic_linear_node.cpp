#include "layer_import/dynamic_linear_node.h"

#include <cstring>
#include <stdexcept>
#include <utility>

namespace qnnpy {

int add_dynamic_linear_node(Graph& g, LayerNode layer, bool reduce_range) {
  auto fail = [&](const std::string& msg) { throw std::invalid_argument("dynamic_linear (" + layer.source + "): " + msg); };
  if (layer.weight.shape.size() != 2) fail("weight must be 2-D, got " + shape_str(layer.weight.shape));
  const int64_t channels = layer.weight.shape[0];
  if (layer.bias && layer.bias->size != channels) {
    fail("bias has " + std::to_string(layer.bias->size) + " values for " + std::to_string(channels) + " output channels");
  }
  // The int8 weight as it is; no int32 bias (the input scale is only known at run time).
  const LayerParams lp = add_layer_params(g, layer.name, layer.weight, nullptr, 1.0f);
  Node n;
  n.op = "dynamic_linear";
  n.source = layer.source;
  n.inputs = {layer.input};
  n.ints = {{"relu", {layer.relu}}, {"reduce_range", {reduce_range}}};
  n.params["weight"] = lp.weight;
  if (layer.bias) {
    Param b;
    b.name = layer.name + "_bias";
    b.dtype = DType::Float32;
    b.shape = {channels};
    b.bytes.resize(static_cast<size_t>(channels) * sizeof(float));
    std::memcpy(b.bytes.data(), layer.bias->data, b.bytes.size());
    n.params["bias"] = g.add_param(std::move(b));
  }
  Value out;
  out.name = layer.name;
  out.dtype = DType::Float32;
  return g.add_node(std::move(n), std::move(out), layer.expected_shape);
}

}  // namespace qnnpy
