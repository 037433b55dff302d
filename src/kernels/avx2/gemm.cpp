// AVX2 GEMM: int16 x int16 pairs with vpmaddwd into int32 (exact: no int16
// saturation, unlike u8 x s8 vpmaddubsw). Register tile: 6 rows x 16 columns.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/gemm_tile.h"

namespace qnnpy {
namespace {

// vpmaddwd: each int32 lane sums the two products of an int16 pair.
void tile(const int16_t* a, int64_t kp, int rows, const int16_t* bp, int32_t* c, int64_t ldc, int64_t cols) {
  const int16_t* ar[kGemmMR];
  dense_tile_rows(a, kp, rows, ar);
  gemm_tile(ar, 1, kp, 0, rows, bp, c, ldc, cols, [](__m256i av, __m256i b) { return _mm256_madd_epi16(av, b); });
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
