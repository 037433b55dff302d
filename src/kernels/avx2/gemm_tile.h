// The register tile of the AVX2 GEMMs: 6 rows x kGemmNR columns of int32 accumulators. The int16 GEMM
// (gemm.cpp) runs gemm_tile below; the uint8 x int8 GEMM (gemm_u8s8.cpp) has the same tile in assembly.
#pragma once

#include <immintrin.h>

#include <algorithm>
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

// The kGemmMR row pointers of a tile of dense rows (k elements apart) for gemm_tile:
// rows beyond `rows` repeat the last valid row.
template <class A>
inline void dense_tile_rows(const A* a, int64_t k, int rows, const A** ar) {
  for (int r = 0; r < kGemmMR; ++r) ar[r] = a + std::min(r, rows - 1) * k;
}

// One tile: per step, 4 bytes of each A row (an int16 pair or a uint8 quad) broadcast,
// 64 bytes of packed B (columns 0-7, then 8-15), and `madd(a, b)` giving the step's int32
// sums per lane. Row r of A is read at ar[r] in `runs` runs of run_len elements, run_stride
// apart (one run for dense rows). Named accumulators (not arrays) keep all 12 in registers.
// Only the first `rows` rows are stored.
template <class A, class B, class Madd>
inline void gemm_tile(const A* const* ar, int64_t runs, int64_t run_len, int64_t run_stride, int rows, const B* bp,
                      int32_t* c, int64_t ldc, int64_t cols, Madd madd) {
  constexpr int64_t a_step = 4 / sizeof(A), b_step = 64 / sizeof(B);
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256i c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t s = 0; s < runs; ++s) {
    const A *a0 = ar[0] + s * run_stride, *a1 = ar[1] + s * run_stride, *a2 = ar[2] + s * run_stride;
    const A *a3 = ar[3] + s * run_stride, *a4 = ar[4] + s * run_stride, *a5 = ar[5] + s * run_stride;
    for (int64_t q = 0; q < run_len; q += a_step, bp += b_step) {
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
  }
  store_tile_row(c, c00, c01, cols);
  if (rows > 1) store_tile_row(c + ldc, c10, c11, cols);
  if (rows > 2) store_tile_row(c + 2 * ldc, c20, c21, cols);
  if (rows > 3) store_tile_row(c + 3 * ldc, c30, c31, cols);
  if (rows > 4) store_tile_row(c + 4 * ldc, c40, c41, cols);
  if (rows > 5) store_tile_row(c + 5 * ldc, c50, c51, cols);
}

}  // namespace qnnpy
