// The scalar reference kernels (declarations); see kernels.h for the contracts.
#pragma once

#include "kernels/kernels.h"

namespace qnnpy {

void gemm_s16_scalar(const int16_t* a, int64_t m, int64_t kp, const int16_t* b_packed, int64_t n, int32_t* c,
                     int64_t ldc);
void gemm_u8s8_scalar(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                      int64_t ldc);
int64_t clamp_u8_scalar(const uint8_t* x, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags);
void depthwise_row_scalar(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                        int32_t* acc);
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

// One element of the float add: `fma_dequant` selects PyTorch's vector-lane
// dequantization fma(s, q, fl(s * -zp)) over its scalar-lane fl(s * (q - zp)).
int32_t add_float_one(int32_t qa, int32_t qb, const AddFloatParams& p, bool fma_dequant);
// Output of one pooled channel: cvtps(fl(float(sum - zp * count) * mult)) + zp, clamped.
int32_t avg_pool_output(int32_t sum, int32_t count, float mult, int32_t zp, int32_t lo, int32_t hi);
// One element of QNNPACK's fixed-point add.
int32_t add_fixed_one(int32_t qa, int32_t qb, const AddFixedParams& p);
// PyTorch's element-wise kernels run SIMD over blocks of this many 8-bit
// elements and a scalar loop over the rest (aten/src/ATen/native/cpu/Loops.h).
constexpr int64_t kTorchVectorBlock = 64;

}  // namespace qnnpy
