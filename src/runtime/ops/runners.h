// Runners of the ops without weights or tables, one group per file (table ops: unary_tables.h).
#pragma once

#include "runtime/ops/op_args.h"

namespace qnnpy {

// The least output elements for which an element-wise node (add, max_pool2d) takes one more
// worker: their kernels run at about 0.2-0.5 ns per output in a model on AMD EPYC Zen 4
// (their inputs come from L2 or further), so this is 7-15 us of one core's time, as the conv
// runners' thresholds (conv_runner.cpp).
constexpr int64_t kMinElementsPerWorker = int64_t{32} << 10;

// quantize_ops.cpp
void run_quantize(const OpArgs& a);
void run_dequantize(const OpArgs& a);
// elementwise_ops.cpp
void run_add(const OpArgs& a);
void run_relu(const OpArgs& a);
// binary_ops.cpp
void run_mul(const OpArgs& a);
// norm_ops.cpp
void run_batch_norm2d(const OpArgs& a);
// normalize_ops.cpp
void run_quantized_layer_norm(const OpArgs& a);
void run_quantized_group_norm(const OpArgs& a);
// softmax_ops.cpp
void run_quantized_softmax(const OpArgs& a);
// concat_ops.cpp
void run_cat(const OpArgs& a);
// pool_ops.cpp
void run_max_pool2d(const OpArgs& a);
void run_adaptive_avg_pool2d(const OpArgs& a);
void run_avg_pool2d(const OpArgs& a);
void run_avg_pool3d(const OpArgs& a);
void run_adaptive_avg_pool3d(const OpArgs& a);
void run_mean(const OpArgs& a);
// embedding_ops.cpp
void run_embedding(const OpArgs& a);
void run_embedding_bag(const OpArgs& a);
void run_float_embedding(const OpArgs& a);
void run_affine_embedding(const OpArgs& a);
// shape_ops.cpp
void run_reshape(const OpArgs& a);
void run_permute(const OpArgs& a);
void run_slice(const OpArgs& a);
void run_upsample_nearest2d(const OpArgs& a);

}  // namespace qnnpy
