// The AVX-512 VNNI kernels (declarations); see kernels.h for the contracts. The other
// entries of this ISA's kernel set are the AVX2 kernels (dispatch.cpp).
#pragma once

#include "kernels/kernels.h"

namespace qnnpy {

// Exact for any uint8 A: vpdpbusd sums the four u8 x s8 products of a quad straight
// into int32, with no int16 intermediate (so no clamp of A is needed).
void gemm_u8s8_avx512vnni(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                          int64_t ldc);
// vpdpwssd on int16 tap pairs: exact, as the AVX2 variant's vpmaddwd + vpaddd.
void depthwise_row_avx512vnni(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                              int32_t* acc);

}  // namespace qnnpy
