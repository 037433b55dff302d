// The AVX2 kernels (declarations); see kernels.h for the contracts. The list mirrors
// scalar_kernels.h name for name; it stays a file of its own because each ISA folder
// declares what it defines (a shared macro list would hide the signatures).
#pragma once

#include "kernels/kernels.h"

namespace qnnpy {

void gemm_s16_avx2(const int16_t* a, int64_t m, int64_t kp, const int16_t* b_packed, int64_t n, int32_t* c,
                     int64_t ldc);
void gemm_u8s8_avx2(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                      int64_t ldc);
void window_columns_avx2(const uint8_t* const* rows, int64_t kh, int64_t c, int64_t width, uint8_t* dst);
void winograd_input_avx2(const uint8_t* x, const WinogradInput& s, int16_t* v);
void winograd_output_avx2(const int32_t* m, const WinogradOutput& s, int32_t* y);
void gemm_u8s8_runs_avx2(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc);
int64_t clamp_u8_avx2(const uint8_t* x, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags);
void depthwise_row_avx2(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                        int32_t* acc);
int64_t interleave4_avx2(const uint8_t* const* rows, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags);
void depthwise_quads_avx2(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                          int32_t* const* acc);
void requantize_avx2(const int32_t* acc, int64_t m, int64_t n, int64_t ld_acc, const RequantParams& p, uint8_t* out,
                       int64_t ld_out);
void quantize_avx2(const float* x, int64_t n, float inv_scale, int32_t zp, int32_t lo, int32_t hi, uint8_t* out);
void dequantize_avx2(const uint8_t* q, int64_t n, bool is_signed, float scale, int32_t zp, float* out);
void add_float_avx2(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFloatParams& p,
                      uint8_t* out);
void add_fixed_avx2(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFixedParams& p,
                      uint8_t* out);
void relu_avx2(const uint8_t* x, int64_t n, bool is_signed, int32_t zp, uint8_t* out);
void max_pool2d_avx2(const uint8_t* x, const Pool2dShape& s, bool is_signed, uint8_t* out);
void adaptive_avg_pool2d_avx2(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AdaptivePoolParams& p,
                                uint8_t* out);
void interleave_planes_avx2(const uint8_t* planes, int64_t plane_stride, int64_t pixels, int64_t c, uint8_t* dst);
void lookup_avx2(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* out);
void mul_avx2(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const MulParams& p, uint8_t* out);
void avg_pool2d_avx2(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out);
void batch_norm_avx2(const uint8_t* x, int64_t pixels, int64_t c, bool is_signed, const BatchNormParams& p,
                      uint8_t* out);

void add_group_sums_avx2(const int32_t* acc, int64_t n, const GroupSumParams& p, float* sums);
void float_dots_avx2(const float* x, const float* rows, int64_t ld, int64_t count, int64_t n, float* out);
void weighted_rows_avx2(const float* w, const float* rows, int64_t ld, int64_t count, int64_t n, float* out);
void int4_group_sums_avx2(const Int4Groups& a);

}  // namespace qnnpy
