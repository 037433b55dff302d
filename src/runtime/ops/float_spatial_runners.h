// Runners of the spatial float ops: float_max_pool2d / float_avg_pool2d (src/ops/pool.cpp),
// float_upsample_nearest2d / float_upsample_bilinear2d (src/ops/shape.cpp), float_batch_norm /
// float_group_norm (src/ops/norm.cpp), float_grid_sample (src/ops/float_ops.cpp). float32 NCHW in logical order, the formulas of PyTorch's CPU
// kernels (each runner names its source).
#pragma once

#include "runtime/ops/op_args.h"

namespace qnnpy {

// PyTorch's float avg_pool2d of an NCHW float32 tensor x into y, with n's window attributes.
void float_avg_pool2d(const Node& n, const Shape& x, const float* x_data, const Shape& y, float* y_data);
// PyTorch's float adaptive_avg_pool2d of an NCHW float32 tensor x into y (y's spatial size).
void float_adaptive_avg_pool2d(const Shape& x, const float* x_data, const Shape& y, float* y_data);

void run_float_max_pool2d(const OpArgs& a);
void run_float_avg_pool2d(const OpArgs& a);
void run_float_upsample_nearest2d(const OpArgs& a);
void run_float_upsample_bilinear2d(const OpArgs& a);
void run_float_batch_norm(const OpArgs& a);
void run_float_group_norm(const OpArgs& a);
void run_float_grid_sample(const OpArgs& a);

}  // namespace qnnpy
