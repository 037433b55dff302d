// Runners of the float ops that move or select values (src/ops/float_movement.cpp), for any
// plain dtype: float32 values in Buffer::f, int64 / int32 / bool ones in Buffer::idx, all in
// logical (row-major) order.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/ops/op_args.h"

namespace qnnpy {

// An index along an axis of `size`: negative ones count from the end; others out of range throw
// std::invalid_argument naming the node.
int64_t checked_index(const OpArgs& a, int64_t i, int64_t size);

// Advanced indexing on the consecutive axes "axes" of input 0, by the integer index tensors from input
// `first` on, broadcast together to `indexed`: input 0 seen as (outer, extent, inner) with the indexed
// axes merged, and the row of that merged axis each element of `indexed` picks (sum_j index_j * stride_j).
struct MergedIndex {
  int64_t outer = 1, extent = 1, inner = 1;
  Shape indexed;
  std::vector<int64_t> rows;
};
MergedIndex merged_index(const OpArgs& a, size_t first);

void run_float_reshape(const OpArgs& a);
void run_float_permute(const OpArgs& a);
void run_float_cat(const OpArgs& a);
void run_float_slice(const OpArgs& a);
void run_float_expand(const OpArgs& a);
void run_float_flip(const OpArgs& a);
// PyTorch's padding modes on the source index j = i - before of an axis of size n: 1 reflect mirrors
// without repeating the edge, 2 replicate repeats the edge, 3 circular wraps around (mode 0,
// constant, has no source outside [0, n): -1).
int64_t float_pad_source_index(int64_t j, int64_t n, int64_t mode);
void run_float_pad(const OpArgs& a);
void run_float_repeat(const OpArgs& a);
void run_float_take(const OpArgs& a);
void run_float_gather(const OpArgs& a);
void run_float_index(const OpArgs& a);

}  // namespace qnnpy
