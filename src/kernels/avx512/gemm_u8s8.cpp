// AVX-512 VNNI GEMM, uint8 activations x int8 weights: vpdpbusd multiplies the four
// u8 x s8 byte pairs of each 32-bit lane and adds their sum to the int32 lane (no
// saturation: vpdpbusds is the saturating form), so the result is exact for any A,
// as the scalar twin's int32 sums. One zmm of packed B is one k quad of a block of
// kGemmNR = 16 columns (pack_b_u8s8's layout). Register tile: 6 rows x up to 4 blocks
// (64 columns): 24 accumulators, 4 B vectors and one broadcast A quad. A is dense rows
// (gemm_u8s8) or rows read in place in runs (gemm_u8s8_runs, the implicit-GEMM conv).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx512/avx512_kernels.h"

namespace qnnpy {
namespace {

constexpr int kRows = 6;
constexpr int kMaxBlocks = 4;

inline __m512i broadcast_quad(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm512_set1_epi32(v);
}

// `rows` rows of A (row r at ar[r], read as `runs` runs of run_len bytes, run_stride apart)
// times `kBlocks` blocks of packed B (block_stride bytes apart); `cols` (<= 16 kBlocks)
// columns of c are stored. ar holds kTileRows pointers (6, or 1 for a single row): those
// beyond `rows` repeat the last valid row; their results are not stored.
template <int kBlocks, int kTileRows = kRows>
void tile(const uint8_t* const* ar, int64_t runs, int64_t run_len, int64_t run_stride, int rows, const int8_t* bp,
          int64_t block_stride, int32_t* c, int64_t ldc, int64_t cols) {
  __m512i acc[kTileRows][kBlocks];
#pragma GCC unroll 6
  for (int r = 0; r < kTileRows; ++r)
#pragma GCC unroll 4
    for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_setzero_si512();
  for (int64_t s = 0; s < runs; ++s) {
    const int64_t offset = s * run_stride;
    for (int64_t q = 0; q < run_len; q += 4, bp += 64) {
      __m512i bv[kBlocks];
#pragma GCC unroll 4
      for (int b = 0; b < kBlocks; ++b) bv[b] = _mm512_loadu_si512(bp + b * block_stride);
#pragma GCC unroll 6
      for (int r = 0; r < kTileRows; ++r) {
        const __m512i av = broadcast_quad(ar[r] + offset + q);
#pragma GCC unroll 4
        for (int b = 0; b < kBlocks; ++b) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], av, bv[b]);
      }
    }
  }
  // Constant indices throughout keep the accumulators in registers.
  __mmask16 mask[kBlocks];
#pragma GCC unroll 4
  for (int b = 0; b < kBlocks; ++b) {
    const int64_t left = cols - b * kGemmNR;
    mask[b] = left >= kGemmNR ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
  }
#pragma GCC unroll 6
  for (int r = 0; r < kTileRows; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 4
    for (int b = 0; b < kBlocks; ++b) _mm512_mask_storeu_epi32(c + r * ldc + b * kGemmNR, mask[b], acc[r][b]);
  }
}

// The tile of `blocks` blocks and kTileRows rows.
template <int kTileRows>
void tile_of_blocks(int blocks, const uint8_t* const* ar, const U8RowRuns& a, int rows, const int8_t* bp,
                    int64_t block_stride, int32_t* c, int64_t ldc, int64_t cols) {
  switch (blocks) {
    case 4:
      return tile<4, kTileRows>(ar, a.runs, a.run_len, a.run_stride, rows, bp, block_stride, c, ldc, cols);
    case 3:
      return tile<3, kTileRows>(ar, a.runs, a.run_len, a.run_stride, rows, bp, block_stride, c, ldc, cols);
    case 2:
      return tile<2, kTileRows>(ar, a.runs, a.run_len, a.run_stride, rows, bp, block_stride, c, ldc, cols);
    default:
      return tile<1, kTileRows>(ar, a.runs, a.run_len, a.run_stride, rows, bp, block_stride, c, ldc, cols);
  }
}

void tile_any(int blocks, const uint8_t* const* ar, const U8RowRuns& a, int rows, const int8_t* bp,
              int64_t block_stride, int32_t* c, int64_t ldc, int64_t cols) {
  // One row of A (a matrix-vector product): a tile of one row, not the same row computed six times.
  if (rows == 1) return tile_of_blocks<1>(blocks, ar, a, rows, bp, block_stride, c, ldc, cols);
  tile_of_blocks<kRows>(blocks, ar, a, rows, bp, block_stride, c, ldc, cols);
}

// Both entry points: row i of A at row(i).
template <class RowAt>
void gemm(RowAt row, const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc) {
  const int64_t kq = a.runs * a.run_len;
  const int64_t blocks = (n + kGemmNR - 1) / kGemmNR, block_stride = kq * kGemmNR;
  // Rows per panel: keep the A panel (rows x kq bytes) within about 64 KiB.
  const int64_t panel = std::max<int64_t>(kRows, (65536 / std::max<int64_t>(kq, 1)) / kRows * kRows);
  // Column blocks per group (a multiple of the tile's kMaxBlocks): the group's packed B within about
  // 16 KiB of L1. A row tile runs over all tiles of a group before the next row tile (see the AVX2 GEMM).
  const int64_t group = kMaxBlocks * std::max<int64_t>(1, 16384 / std::max<int64_t>(block_stride * kMaxBlocks, 1));
  for (int64_t i0 = 0; i0 < m; i0 += panel) {
    const int64_t i1 = std::min(m, i0 + panel);
    for (int64_t g0 = 0; g0 < blocks; g0 += group) {
      const int64_t g1 = std::min(blocks, g0 + group);
      for (int64_t i = i0; i < i1; i += kRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kRows, i1 - i));
        const uint8_t* ar[kRows];
        for (int r = 0; r < kRows; ++r) ar[r] = row(i + std::min(r, rows - 1));
        for (int64_t nb = g0; nb < g1; nb += kMaxBlocks) {
          const int tile_blocks = static_cast<int>(std::min<int64_t>(kMaxBlocks, g1 - nb));
          const int64_t cols = std::min<int64_t>(tile_blocks * kGemmNR, n - nb * kGemmNR);
          tile_any(tile_blocks, ar, a, rows, b_packed + nb * block_stride, block_stride, c + i * ldc + nb * kGemmNR,
                   ldc, cols);
        }
      }
    }
  }
}

}  // namespace

void gemm_u8s8_avx512vnni(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                          int64_t ldc) {
  gemm([a, kq](int64_t i) { return a + i * kq; }, U8RowRuns{nullptr, 1, kq, 0}, m, b_packed, n, c, ldc);
}

void gemm_u8s8_runs_avx512vnni(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c,
                               int64_t ldc) {
  gemm([&a](int64_t i) { return a.rows[i]; }, a, m, b_packed, n, c, ldc);
}

}  // namespace qnnpy
