// Adds the node of a PyTorch layer with weights (conv, transposed conv, linear,
// batch norm) from its parts as PyTorch holds them: the int8 weight, float bias
// and the packed conv configuration. Checks what the parts must agree on before
// reading them; the node then goes through its op's rule like any other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "layer_import/layer_params.h"

namespace qnnpy {

// A borrowed float32 buffer.
struct FloatSpan {
  const float* data = nullptr;
  int64_t size = 0;
};

struct LayerNode {
  int input = -1;           // value id
  std::string source;       // the layer's path in the PyTorch model
  std::string name;         // prefix of the params and the output value
  WeightView weight;
  const FloatSpan* bias = nullptr;  // none when null
  bool relu = false;        // fused ReLU (ConvReLU2d, LinearReLU, BNReLU2d)
  Value output;             // dtype and qparams; the name is `name`
  Shape expected_shape;     // PyTorch's output shape; empty: not checked
};

// `state_version` and `config` as in decode_conv_config.
int add_conv2d_node(Graph& g, LayerNode layer, int state_version, const std::vector<int64_t>& config);
int add_conv3d_node(Graph& g, LayerNode layer, int state_version, const std::vector<int64_t>& config);
int add_conv_transpose2d_node(Graph& g, LayerNode layer, int state_version, const std::vector<int64_t>& config);
int add_linear_node(Graph& g, LayerNode layer);

struct BatchNormParts {
  FloatSpan weight, bias, mean, var;
  double eps = 1e-5;
};

// `layer.weight` and `layer.bias` are unused: the parts are the batch norm's.
int add_batch_norm2d_node(Graph& g, LayerNode layer, const BatchNormParts& bn);

}  // namespace qnnpy
