// Runs conv2d and linear nodes on their prepared (packed) weights.
#pragma once

#include "runtime/ops/op_args.h"
#include "runtime/prepared_layer.h"

namespace qnnpy {

// Depthwise convs use the direct depthwise kernel; all others im2col + GEMM in
// row chunks split over `threads` workers.
void run_weighted(const OpArgs& a, const PreparedLayer& L, int threads);

}  // namespace qnnpy
