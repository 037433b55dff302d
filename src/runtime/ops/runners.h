// Runners of the ops without weights, one group per file.
#pragma once

#include "runtime/ops/op_args.h"

namespace qnnpy {

// quantize_ops.cpp
void run_quantize(const OpArgs& a);
void run_dequantize(const OpArgs& a);
// elementwise_ops.cpp
void run_add(const OpArgs& a);
void run_relu(const OpArgs& a);
// pool_ops.cpp
void run_max_pool2d(const OpArgs& a);
void run_adaptive_avg_pool2d(const OpArgs& a);
// shape_ops.cpp
void run_reshape(const OpArgs& a);

}  // namespace qnnpy
