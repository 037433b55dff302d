#include "layer_import/layer_nodes.h"

#include <stdexcept>
#include <utility>

#include "ir/limits.h"
#include "layer_import/conv_config.h"

namespace qnnpy {
namespace {

[[noreturn]] void fail(const std::string& op, const LayerNode& layer, const std::string& msg) {
  throw std::invalid_argument(op + " (" + layer.source + "): " + msg);
}

ConvConfig decode_config(const std::string& op, const LayerNode& layer, int state_version, const std::vector<int64_t>& config) {
  try {
    return decode_conv_config(state_version, config);
  } catch (const std::invalid_argument& e) {
    fail(op, layer, e.what());
  }
}

// Builds the int8 weight and int32 bias params (the bias scale needs the input's
// one scale) and adds the node.
int add_weighted(Graph& g, const std::string& op, LayerNode layer, Node node, int64_t out_channels) {
  const Value& in = g.value(layer.input);
  if (in.dtype == DType::Float32 || in.q.scale.size() != 1) fail(op, layer, "input must be quantized per tensor");
  if (layer.bias && layer.bias->size != out_channels) {
    fail(op, layer, "bias has " + std::to_string(layer.bias->size) + " values for " + std::to_string(out_channels) +
                        " output channels");
  }
  const LayerParams lp = add_layer_params(g, layer.name, layer.weight, layer.bias ? layer.bias->data : nullptr,
                                          in.q.scale[0], out_channels);
  node.op = op;
  node.source = layer.source;
  node.inputs = {layer.input};
  node.ints["relu"] = {layer.relu};
  node.params["weight"] = lp.weight;
  if (lp.bias >= 0) {
    node.params["bias"] = lp.bias;
    node.params["bias_float"] = lp.bias_float;
    node.ints["bias_saturated"] = {lp.bias_saturated};
  }
  layer.output.name = layer.name;
  return g.add_node(std::move(node), std::move(layer.output), layer.expected_shape);
}

}  // namespace

int add_conv2d_node(Graph& g, LayerNode layer, int state_version, const std::vector<int64_t>& config) {
  const ConvConfig c = decode_config("conv2d", layer, state_version, config);
  if (c.spatial_dims != 2) fail("conv2d", layer, "needs 2 spatial dims, the packed config has " + std::to_string(c.spatial_dims));
  if (c.transpose) fail("conv2d", layer, "the packed config is a transposed conv");
  if (layer.weight.shape.size() != 4) fail("conv2d", layer, "weight must be 4-D, got " + shape_str(layer.weight.shape));
  Node n;
  n.ints = {{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", {c.groups}}};
  const int64_t channels = layer.weight.shape[0];
  return add_weighted(g, "conv2d", std::move(layer), std::move(n), channels);
}

int add_conv3d_node(Graph& g, LayerNode layer, int state_version, const std::vector<int64_t>& config) {
  const ConvConfig c = decode_config("conv3d", layer, state_version, config);
  if (c.spatial_dims != 3) fail("conv3d", layer, "needs 3 spatial dims, the packed config has " + std::to_string(c.spatial_dims));
  if (c.transpose) fail("conv3d", layer, "a transposed 3-D conv is not supported");
  if (layer.weight.shape.size() != 5) fail("conv3d", layer, "weight must be 5-D, got " + shape_str(layer.weight.shape));
  Node n;
  n.ints = {{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", {c.groups}}};
  const int64_t channels = layer.weight.shape[0];
  return add_weighted(g, "conv3d", std::move(layer), std::move(n), channels);
}

int add_conv_transpose2d_node(Graph& g, LayerNode layer, int state_version, const std::vector<int64_t>& config) {
  const ConvConfig c = decode_config("conv_transpose2d", layer, state_version, config);
  if (c.spatial_dims != 2 || !c.transpose) fail("conv_transpose2d", layer, "needs a transposed 2-D conv configuration");
  if (layer.weight.q.per_channel()) {
    fail("conv_transpose2d", layer, "per-channel weights of a transposed conv are not supported (PyTorch does not produce them either)");
  }
  if (layer.weight.shape.size() != 4) fail("conv_transpose2d", layer, "weight must be 4-D, got " + shape_str(layer.weight.shape));
  Node n;
  n.ints = {{"stride", c.stride}, {"padding", c.padding}, {"output_padding", c.output_padding},
            {"dilation", c.dilation}, {"groups", {c.groups}}};
  // The weight is (in, out / groups, kh, kw); the bounds keep the product inside int64 (the graph
  // validator then checks the sizes it makes).
  if (c.groups < 1 || c.groups > kMaxExtent || layer.weight.shape[1] < 1 || layer.weight.shape[1] > kMaxExtent) {
    fail("conv_transpose2d", layer, "groups " + std::to_string(c.groups) + " with weight " +
                                        shape_str(layer.weight.shape) + " is out of range");
  }
  const int64_t channels = layer.weight.shape[1] * c.groups;
  return add_weighted(g, "conv_transpose2d", std::move(layer), std::move(n), channels);
}

int add_linear_node(Graph& g, LayerNode layer) {
  if (layer.weight.shape.size() != 2) fail("linear", layer, "weight must be 2-D, got " + shape_str(layer.weight.shape));
  const int64_t channels = layer.weight.shape[0];
  return add_weighted(g, "linear", std::move(layer), Node{}, channels);
}

int add_batch_norm2d_node(Graph& g, LayerNode layer, const BatchNormParts& bn) {
  const int64_t c = bn.weight.size;
  if (bn.bias.size != c || bn.mean.size != c || bn.var.size != c) {
    fail("batch_norm2d", layer, "weight, bias, mean and var differ in length (" + std::to_string(c) + ", " +
                                    std::to_string(bn.bias.size) + ", " + std::to_string(bn.mean.size) + ", " +
                                    std::to_string(bn.var.size) + ")");
  }
  Node n;
  n.op = "batch_norm2d";
  n.source = layer.source;
  n.inputs = {layer.input};
  n.ints = {{"relu", {layer.relu}}};
  n.floats = {{"eps", bn.eps}};
  n.params = add_batch_norm_params(g, layer.name, c, bn.weight.data, bn.bias.data, bn.mean.data, bn.var.data);
  layer.output.name = layer.name;
  return g.add_node(std::move(n), std::move(layer.output), layer.expected_shape);
}

}  // namespace qnnpy
