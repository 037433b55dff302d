// Shared pieces of the NEON GEMMs (gemm_s16.cpp, gemm_u8s8.cpp, gemm_u8s8_dot.cpp):
// the loop over row panels and column blocks, the column sums of packed int8 B, and
// the store of a 4-column group of one row.
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/kernels.h"

namespace qnnpy::neon {

// Stores columns [4 g, 4 g + 4) of a tile row, clipped to `cols`.
inline void store_group(int32_t* c, int g, int32x4_t v, int64_t cols) {
  const int64_t first = 4 * g;
  if (cols >= first + 4) {
    vst1q_s32(c + first, v);
  } else if (cols > first) {
    int32_t tmp[4];
    vst1q_s32(tmp, v);
    std::memcpy(c + first, tmp, static_cast<size_t>(cols - first) * sizeof(int32_t));
  }
}

// The 16 column sums of one block of B packed by pack_b_u8s8 (kq / 4 steps of 64 bytes):
// sum[j] = sum over k of b[k][j], each 16-byte vector (4 columns x 4 k) summed by
// pairwise widening adds (saddlp, sadalp): exact.
inline void column_sums_u8s8(const int8_t* bp, int64_t kq, int32x4_t sum[4]) {
  for (int g = 0; g < 4; ++g) sum[g] = vdupq_n_s32(0);
  for (int64_t q = 0; q < kq; q += 4, bp += 64)
    for (int g = 0; g < 4; ++g) sum[g] = vpadalq_s16(sum[g], vpaddlq_s8(vld1q_s8(bp + 16 * g)));
}

// Runs tile(a_rows, rows, b_block, c_tile, cols) over the whole product in row panels of
// about 64 KiB of A (as the AVX2 GEMMs do), kMR rows per tile and kGemmNR columns per block.
template <int kMR, class Tile>
inline void for_each_tile(int64_t m, int64_t k_bytes, int64_t b_block_elems, int64_t n, int64_t ldc, int32_t* c,
                          Tile tile) {
  const int64_t blocks = (n + kGemmNR - 1) / kGemmNR;
  const int64_t panel = std::max<int64_t>(kMR, (65536 / std::max<int64_t>(k_bytes, 1)) / kMR * kMR);
  for (int64_t i0 = 0; i0 < m; i0 += panel) {
    const int64_t i1 = std::min(m, i0 + panel);
    for (int64_t nb = 0; nb < blocks; ++nb) {
      const int64_t cols = std::min<int64_t>(kGemmNR, n - nb * kGemmNR);
      for (int64_t i = i0; i < i1; i += kMR) {
        tile(i, static_cast<int>(std::min<int64_t>(kMR, i1 - i)), nb * b_block_elems, c + i * ldc + nb * kGemmNR, cols);
      }
    }
  }
}

}  // namespace qnnpy::neon
