// The register tile of both AVX2 GEMMs (gemm.cpp: int16 x int16, gemm_u8s8.cpp: uint8 x int8):
// 6 rows x kGemmNR columns of int32 accumulators.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kernels.h"

namespace qnnpy {

constexpr int kGemmMR = 6;

// The 4 bytes at p (a pair of int16 or a quad of uint8) in every 32-bit lane.
inline __m256i broadcast_4_bytes(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// Stores one accumulator row (lo: columns 0-7, hi: 8-15); `cols` < kGemmNR stores a partial row.
inline void store_tile_row(int32_t* c, __m256i lo, __m256i hi, int64_t cols) {
  if (cols == kGemmNR) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + 8), hi);
    return;
  }
  alignas(32) int32_t tmp[kGemmNR];
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), lo);
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + 8), hi);
  std::memcpy(c, tmp, cols * sizeof(int32_t));
}

// One tile: per step, 4 bytes of each A row (an int16 pair or a uint8 quad) broadcast,
// 64 bytes of packed B (columns 0-7, then 8-15), and `madd(a, b)` giving the step's int32
// sums per lane. Named accumulators (not arrays) keep all 12 in registers. Rows beyond
// `rows` re-read the last valid row; their results are not stored.
template <class A, class B, class Madd>
inline void gemm_tile(const A* a, int64_t k, int rows, const B* bp, int32_t* c, int64_t ldc, int64_t cols, Madd madd) {
  constexpr int64_t a_step = 4 / sizeof(A), b_step = 64 / sizeof(B);
  const A* a0 = a;
  const A* a1 = rows > 1 ? a0 + k : a0;
  const A* a2 = rows > 2 ? a1 + k : a1;
  const A* a3 = rows > 3 ? a2 + k : a2;
  const A* a4 = rows > 4 ? a3 + k : a3;
  const A* a5 = rows > 5 ? a4 + k : a4;
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256i c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t q = 0; q < k; q += a_step, bp += b_step) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp) + 1);
    __m256i av = broadcast_4_bytes(a0 + q);
    c00 = _mm256_add_epi32(c00, madd(av, b0));
    c01 = _mm256_add_epi32(c01, madd(av, b1));
    av = broadcast_4_bytes(a1 + q);
    c10 = _mm256_add_epi32(c10, madd(av, b0));
    c11 = _mm256_add_epi32(c11, madd(av, b1));
    av = broadcast_4_bytes(a2 + q);
    c20 = _mm256_add_epi32(c20, madd(av, b0));
    c21 = _mm256_add_epi32(c21, madd(av, b1));
    av = broadcast_4_bytes(a3 + q);
    c30 = _mm256_add_epi32(c30, madd(av, b0));
    c31 = _mm256_add_epi32(c31, madd(av, b1));
    av = broadcast_4_bytes(a4 + q);
    c40 = _mm256_add_epi32(c40, madd(av, b0));
    c41 = _mm256_add_epi32(c41, madd(av, b1));
    av = broadcast_4_bytes(a5 + q);
    c50 = _mm256_add_epi32(c50, madd(av, b0));
    c51 = _mm256_add_epi32(c51, madd(av, b1));
  }
  store_tile_row(c, c00, c01, cols);
  if (rows > 1) store_tile_row(c + ldc, c10, c11, cols);
  if (rows > 2) store_tile_row(c + 2 * ldc, c20, c21, cols);
  if (rows > 3) store_tile_row(c + 3 * ldc, c30, c31, cols);
  if (rows > 4) store_tile_row(c + 4 * ldc, c40, c41, cols);
  if (rows > 5) store_tile_row(c + 5 * ldc, c50, c51, cols);
}

}  // namespace qnnpy
