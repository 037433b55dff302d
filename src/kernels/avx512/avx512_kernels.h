// The AVX-512 kernels (declarations); see kernels.h for the contracts. The other
// entries of this ISA's kernel set are the AVX2 kernels (dispatch.cpp).
#pragma once

#include "kernels/kernels.h"

namespace qnnpy {

// Exact for any uint8 A: vpdpbusd sums the four u8 x s8 products of a quad straight
// into int32, with no int16 intermediate (so no clamp of A is needed).
void gemm_u8s8_avx512vnni(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                          int64_t ldc);
void gemm_u8s8_runs_avx512vnni(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c,
                               int64_t ldc);
// vpdpwssd on int16 tap pairs: exact, as the AVX2 variant's vpmaddwd + vpaddd.
void depthwise_row_avx512vnni(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                              int32_t* acc);
// vpdpbusd on quads of interleaved rows: exact for any byte, so no clamp of the input.
void depthwise_quads_avx512vnni(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                                int32_t* const* acc);
// vpdpbusd on the int4 weights unpacked to bytes (the weights the unsigned side, q the signed one): exact.
void int4_group_sums_avx512vnni(const Int4Groups& a);
// zmm forms of the AVX2 kernels of the same names (AVX-512 F/BW/VL), same results bit for bit.
void add_float_avx512(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFloatParams& p,
                      uint8_t* out);
void add_fixed_avx512(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFixedParams& p,
                      uint8_t* out);
void max_pool2d_avx512(const uint8_t* x, const Pool2dShape& s, bool is_signed, uint8_t* out);
void adaptive_avg_pool2d_avx512(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AdaptivePoolParams& p,
                                uint8_t* out);
void avg_pool2d_avx512(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out);

}  // namespace qnnpy
