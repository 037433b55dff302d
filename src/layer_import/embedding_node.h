// Builds an embedding node (src/ops/embedding.cpp) with its table params: the uint8 table with
// its per-row float scale and zero point (embedding, embedding_bag), or the float32 table
// (float_embedding).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace qnnpy {

struct EmbeddingTable {
  DType dtype = DType::UInt8;         // UInt8 or Float32
  const void* data = nullptr;         // rows x dim values of `dtype`
  Shape shape;                        // (rows, dim)
  const float* row_scale = nullptr;   // rows values (UInt8 tables)
  const float* row_zero_point = nullptr;
};

// `inputs` are value ids (indices first); returns the output value id.
int add_embedding_node(Graph& g, const std::string& op, const std::vector<int>& inputs, const std::string& source,
                       const std::string& name, const EmbeddingTable& table,
                       std::map<std::string, std::vector<int64_t>> ints, const Shape& expected_shape);

}  // namespace qnnpy
