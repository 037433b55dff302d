// AVX2 GEMM: int16 x int16 pairs with vpmaddwd into int32 (exact: no int16
// saturation, unlike u8 x s8 vpmaddubsw). Register tile: 6 rows x 16 columns.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/gemm_tile.h"

namespace qnnpy {
namespace {

// Named accumulators (not arrays) keep all 12 in registers. Rows beyond `rows`
// re-read the last valid row; their results are not stored.
void tile(const int16_t* a, int64_t kp, int rows, const int16_t* bp, int32_t* c, int64_t ldc, int64_t cols) {
  const int16_t* a0 = a;
  const int16_t* a1 = rows > 1 ? a0 + kp : a0;
  const int16_t* a2 = rows > 2 ? a1 + kp : a1;
  const int16_t* a3 = rows > 3 ? a2 + kp : a2;
  const int16_t* a4 = rows > 4 ? a3 + kp : a3;
  const int16_t* a5 = rows > 5 ? a4 + kp : a4;
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256i c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t k = 0; k < kp; k += 2, bp += 2 * kGemmNR) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + kGemmNR));
    __m256i av = broadcast_4_bytes(a0 + k);
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(av, b0));
    c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(av, b1));
    av = broadcast_4_bytes(a1 + k);
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(av, b0));
    c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(av, b1));
    av = broadcast_4_bytes(a2 + k);
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(av, b0));
    c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(av, b1));
    av = broadcast_4_bytes(a3 + k);
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(av, b0));
    c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(av, b1));
    av = broadcast_4_bytes(a4 + k);
    c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(av, b0));
    c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(av, b1));
    av = broadcast_4_bytes(a5 + k);
    c50 = _mm256_add_epi32(c50, _mm256_madd_epi16(av, b0));
    c51 = _mm256_add_epi32(c51, _mm256_madd_epi16(av, b1));
  }
  store_tile_row(c, c00, c01, cols);
  if (rows > 1) store_tile_row(c + ldc, c10, c11, cols);
  if (rows > 2) store_tile_row(c + 2 * ldc, c20, c21, cols);
  if (rows > 3) store_tile_row(c + 3 * ldc, c30, c31, cols);
  if (rows > 4) store_tile_row(c + 4 * ldc, c40, c41, cols);
  if (rows > 5) store_tile_row(c + 5 * ldc, c50, c51, cols);
}

}  // namespace

void gemm_s16_avx2(const int16_t* a, int64_t m, int64_t kp, const int16_t* b_packed, int64_t n, int32_t* c,
                   int64_t ldc) {
  const int64_t blocks = (n + kGemmNR - 1) / kGemmNR;
  const int64_t pairs = kp / 2;
  // Rows per panel: keep the A panel (rows x kp int16) within about 128 KiB of L2.
  const int64_t panel = std::max<int64_t>(kGemmMR, (65536 / std::max<int64_t>(kp, 1)) / kGemmMR * kGemmMR);
  for (int64_t i0 = 0; i0 < m; i0 += panel) {
    const int64_t i1 = std::min(m, i0 + panel);
    for (int64_t nb = 0; nb < blocks; ++nb) {
      const int16_t* bp = b_packed + nb * pairs * 2 * kGemmNR;
      const int64_t cols = std::min<int64_t>(kGemmNR, n - nb * kGemmNR);
      for (int64_t i = i0; i < i1; i += kGemmMR) {
        tile(a + i * kp, kp, static_cast<int>(std::min<int64_t>(kGemmMR, i1 - i)), bp, c + i * ldc + nb * kGemmNR, ldc,
             cols);
      }
    }
  }
}

}  // namespace qnnpy
