// The register tile of the AVX2 GEMMs: 6 rows x kGemmNR columns of int32 accumulators. The int16 GEMM
// (gemm.cpp) runs gemm_tile below; the uint8 x int8 GEMMs (gemm_u8s8.cpp in assembly, and the avxvnni
// set's) have the same tile and walk A and B with gemm_u8s8_blocks.
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

// A tile of kGemmMR rows x kGemmNR columns stored into c (rows x cols of it): full(out) computes
// it, storing row r's kGemmNR results at out[r] (kGemmNR / 2 of them where `half`: cols <= 8).
// Full rows of kGemmNR columns are stored in place, the others go through a buffer.
template <class Full>
inline void store_tile(int rows, int32_t* c, int64_t ldc, int64_t cols, Full full) {
  alignas(32) int32_t spare[kGemmMR][kGemmNR];
  int32_t* out[kGemmMR];
  const bool in_place = cols == kGemmNR;
  for (int r = 0; r < kGemmMR; ++r) out[r] = in_place && r < rows ? c + r * ldc : spare[r];
  full(out, cols <= kGemmNR / 2);
  if (in_place) return;
  for (int r = 0; r < rows; ++r) std::memcpy(c + r * ldc, spare[r], cols * sizeof(int32_t));
}

// The walk of the u8 x s8 GEMMs over A (row i at row(i), read as a's runs) and packed B: rows in
// panels whose A stays within about 64 KiB; column blocks in groups whose packed B stays within
// about 16 KiB of L1. A row tile runs over all blocks of a group before the next tile, so that with
// a small k (few steps per tile) its row pointers are set once for several blocks; with a large k
// a group is one block held in L1. tile(ar, rows, bp, c, cols) computes one tile: rows of A at
// ar[0..kGemmMR) (those past `rows` repeat the last), block bp of B, cols <= kGemmNR of c.
template <class RowAt, class Tile>
void gemm_u8s8_blocks(RowAt row, const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c,
                      int64_t ldc, Tile tile) {
  const int64_t kq = a.runs * a.run_len, blocks = (n + kGemmNR - 1) / kGemmNR;
  const int64_t panel = std::max<int64_t>(kGemmMR, (65536 / std::max<int64_t>(kq, 1)) / kGemmMR * kGemmMR);
  const int64_t group = std::max<int64_t>(1, 16384 / std::max<int64_t>(kq * kGemmNR, 1));
  for (int64_t i0 = 0; i0 < m; i0 += panel) {
    const int64_t i1 = std::min(m, i0 + panel);
    for (int64_t g0 = 0; g0 < blocks; g0 += group) {
      const int64_t g1 = std::min(blocks, g0 + group);
      for (int64_t i = i0; i < i1; i += kGemmMR) {
        const int rows = static_cast<int>(std::min<int64_t>(kGemmMR, i1 - i));
        const uint8_t* ar[kGemmMR];
        for (int r = 0; r < kGemmMR; ++r) ar[r] = row(i + std::min(r, rows - 1));
        for (int64_t nb = g0; nb < g1; ++nb) {
          const int64_t cols = std::min<int64_t>(kGemmNR, n - nb * kGemmNR);
          tile(ar, rows, b_packed + nb * kq * kGemmNR, c + i * ldc + nb * kGemmNR, ldc, cols);
        }
      }
    }
  }
}

}  // namespace qnnpy
