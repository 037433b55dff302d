// Runners of the float ops that move or select values (src/ops/float_movement.cpp), for any
// plain dtype: float32 values in Buffer::f, int64 / int32 / bool ones in Buffer::idx, all in
// logical (row-major) order.
#pragma once

#include "runtime/ops/op_args.h"

namespace qnnpy {

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
// Indices outside [-size, size) of their axis throw std::invalid_argument naming the node.
void run_float_take(const OpArgs& a);
void run_float_gather(const OpArgs& a);
void run_float_index(const OpArgs& a);

}  // namespace qnnpy
