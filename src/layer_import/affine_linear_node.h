// Adds the node of a torchao quantize_ linear (affine_linear, ops/affine_linear.cpp) from the parts its
// weight tensor subclass holds.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace qnnpy {

struct AffineLinearLayer {
  int input = -1;
  std::string source, name;
  const int8_t* weight = nullptr;  // (out_channels, in_channels)
  int64_t out_channels = 0, in_channels = 0, group_size = 0;
  const float* weight_scale = nullptr;       // out_channels * in_channels / group_size, row-major
  const int8_t* weight_zero_point = nullptr;  // likewise
  const float* bias = nullptr;                // out_channels, or null
  int activation = 0, weight_bits = 8;
  bool scale_after_dot = false;
  Shape expected_shape;
};

int add_affine_linear_node(Graph& g, const AffineLinearLayer& layer);

}  // namespace qnnpy
