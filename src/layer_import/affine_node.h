// Adds the node of a torchao quantize_ layer (affine_linear, affine_embedding: ops/affine_weight.h) from the
// parts its weight tensor subclass holds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace qnnpy {

struct AffineLayer {
  std::string op;  // "affine_linear" or "affine_embedding"
  int input = -1;
  std::string source, name;
  const int8_t* weight = nullptr;  // (rows, cols): (out_channels, in_channels) of a linear, the table of an embedding
  int64_t rows = 0, cols = 0, group_size = 0;
  const float* weight_scale = nullptr;       // rows * cols / group_size, row-major
  const int8_t* weight_zero_point = nullptr;  // likewise
  const float* weight_offset = nullptr;       // likewise, or null (ops/affine_weight.h)
  const float* bias = nullptr;                // rows (a linear's), or null
  int weight_bits = 8;
  std::map<std::string, std::vector<int64_t>> ints;  // the op's other attributes
  Shape expected_shape;
};

int add_affine_node(Graph& g, const AffineLayer& layer);

}  // namespace qnnpy
