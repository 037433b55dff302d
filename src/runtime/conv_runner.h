// Runs conv2d and linear nodes on their prepared (packed) weights.
#pragma once

#include "runtime/ops/op_args.h"
#include "runtime/prepared_layer.h"

namespace qnnpy {

// Depthwise convs use the direct depthwise kernel; all others im2col + GEMM in
// tasks of rows (and, when rows are few, column blocks) split over `threads` workers.
// The GEMM is uint8 x int8 when the layer has that path and this input cannot
// saturate its int16 pair sums, exact int16 otherwise. Returns the kernel used:
// "depthwise", "gemm_u8s8" or "gemm_s16".
const char* run_weighted(const OpArgs& a, const PreparedLayer& L, int threads);

}  // namespace qnnpy
