// The scalar reference kernels (declarations); see kernels.h for the contracts.
#pragma once

#include "kernels/kernels.h"

namespace qnnpy {

void gemm_s16_scalar(const int16_t* a, int64_t m, int64_t kp, const int16_t* b_packed, int64_t n, int32_t* c,
                     int64_t ldc);
void gemm_u8s8_scalar(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                      int64_t ldc);
void gemm_u8s8_runs_scalar(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c,
                           int64_t ldc);
void window_columns_scalar(const uint8_t* const* rows, int64_t kh, int64_t c, int64_t width, uint8_t* dst);
void winograd_input_scalar(const uint8_t* x, const WinogradInput& s, int16_t* v);
void winograd_output_scalar(const int32_t* m, const WinogradOutput& s, int32_t* y);
// One tile and channel of each (the SIMD variants' tails).
void winograd_input_channel(const uint8_t* x, const WinogradInput& s, int64_t t, int64_t ch, int16_t* v);
void winograd_output_channel(const int32_t* m, const WinogradOutput& s, int64_t t, int64_t ch, int32_t* y);
int64_t clamp_u8_scalar(const uint8_t* x, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags);
void depthwise_row_scalar(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                        int32_t* acc);
int64_t interleave4_scalar(const uint8_t* const* rows, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags);
void depthwise_quads_scalar(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                            int32_t* const* acc);
// Channels [ch0, ch1) of depthwise_quads_scalar (the SIMD variants' tails).
void depthwise_quads_channels(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                              int32_t* const* acc, int64_t ch0, int64_t ch1);
void requantize_scalar(const int32_t* acc, int64_t m, int64_t n, int64_t ld_acc, const RequantParams& p, uint8_t* out,
                       int64_t ld_out);
void quantize_scalar(const float* x, int64_t n, float inv_scale, int32_t zp, int32_t lo, int32_t hi, uint8_t* out);
void dequantize_scalar(const uint8_t* q, int64_t n, bool is_signed, float scale, int32_t zp, float* out);
void add_float_scalar(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFloatParams& p,
                      uint8_t* out);
void add_fixed_scalar(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFixedParams& p,
                      uint8_t* out);
void relu_scalar(const uint8_t* x, int64_t n, bool is_signed, int32_t zp, uint8_t* out);
void max_pool2d_scalar(const uint8_t* x, const Pool2dShape& s, bool is_signed, uint8_t* out);
void adaptive_avg_pool2d_scalar(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AdaptivePoolParams& p,
                                uint8_t* out);
void interleave_planes_scalar(const uint8_t* planes, int64_t plane_stride, int64_t pixels, int64_t c, uint8_t* dst);
void lookup_scalar(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* out);
void mul_scalar(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const MulParams& p, uint8_t* out);
void avg_pool2d_scalar(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out);
// The 3-D pools (NCDHW storage; scalar only, no SIMD variant): PyTorch's avg_pool3d, whose one NDHWC kernel is its
// avg_pool2d's Nhwc rule over a kd x kh x kw window (p.rule must be Nhwc), and adaptive_avg_pool3d under the
// FbgemmNhwc (channels_last_3d input) or FbgemmNchw (contiguous input) rule.
void avg_pool3d_scalar(const uint8_t* x, const Pool3dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out);
void adaptive_avg_pool3d_scalar(const uint8_t* x, const Pool3dShape& s, bool is_signed, const AdaptivePoolParams& p,
                                uint8_t* out);
void batch_norm_scalar(const uint8_t* x, int64_t pixels, int64_t c, bool is_signed, const BatchNormParams& p,
                      uint8_t* out);

// One element of the float add: `fma_dequant` selects PyTorch's vector-lane
// dequantization fma(s, q, fl(s * -zp)) over its scalar-lane fl(s * (q - zp)).
int32_t add_float_one(int32_t qa, int32_t qb, const AddFloatParams& p, bool fma_dequant);
// Output of one pooled channel: cvtps(fl(float(sum - zp * count) * mult)) + zp, clamped.
int32_t avg_pool_output(int32_t sum, int32_t count, float mult, int32_t zp, int32_t lo, int32_t hi);
// One element of PyTorch's quantized multiply.
int32_t mul_one(int32_t qa, int32_t qb, const MulParams& p);
// avg_pool2d's window of output (oy, ox): taps, divisor and the two multipliers.
struct AvgPoolTaps {
  PoolWindow y, x;
  int32_t taps;
  float vector_mult, tail_mult;
};
AvgPoolTaps avg_pool_taps(const Pool2dShape& s, const AvgPool2dParams& p, int64_t oy, int64_t ox);
// One output channel of avg_pool2d from acc = sum - zp * taps.
int32_t avg_pool2d_output(int32_t acc, float mult, const AvgPool2dParams& p);
// One channel of the batch norm: `vector_lane` selects PyTorch's fma over its scalar mul + add.
int32_t batch_norm_one(int32_t q, float alpha, float beta, const BatchNormParams& p, bool vector_lane);
// One element of QNNPACK's fixed-point add.
int32_t add_fixed_one(int32_t qa, int32_t qb, const AddFixedParams& p);

void add_group_sums_scalar(const int32_t* acc, int64_t n, const GroupSumParams& p, float* sums);
void float_dots_scalar(const float* x, const float* rows, int64_t ld, int64_t count, int64_t n, float* out);
void weighted_rows_scalar(const float* w, const float* rows, int64_t ld, int64_t count, int64_t n, float* out);
void int4_group_sums_scalar(const Int4Groups& a);

}  // namespace qnnpy
