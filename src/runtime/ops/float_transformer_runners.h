// Runners of the transformer float ops (src/ops/float_transformer_ops.cpp): float32 in
// logical order in Buffer::f, float32 out. Sums accumulate in a fixed order of their own,
// and exp / erf / tanh come from the C library, so results may differ from PyTorch's
// vectorized float kernels in the last bits (docs/pt2e.md, "Transformer encoders").
#pragma once

#include "runtime/ops/op_args.h"

namespace qnnpy {

void run_float_softmax(const OpArgs& a);
void run_float_layer_norm(const OpArgs& a);
void run_float_gelu(const OpArgs& a);
void run_float_matmul(const OpArgs& a);
void run_float_attention(const OpArgs& a);  // float_attention.cpp

}  // namespace qnnpy
