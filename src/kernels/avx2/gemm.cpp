// AVX2 GEMM: int16 x int16 pairs with vpmaddwd into int32 (exact: no int16
// saturation, unlike u8 x s8 vpmaddubsw). Register tile: 6 rows x 16 columns.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx2/avx2_kernels.h"

namespace qnnpy {
namespace {

constexpr int kMR = 6;

inline __m256i broadcast_pair(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

template <int MR>
void tile(const int16_t* a, int64_t kp, const int16_t* bp, int32_t* c, int64_t ldc, int64_t cols) {
  __m256i acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const int64_t pairs = kp / 2;
  for (int64_t p = 0; p < pairs; ++p) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + p * 2 * kGemmNR));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + p * 2 * kGemmNR + kGemmNR));
    for (int r = 0; r < MR; ++r) {
      const __m256i av = broadcast_pair(a + r * kp + 2 * p);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
    }
  }
  for (int r = 0; r < MR; ++r) {
    if (cols == kGemmNR) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), acc[r][0]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), acc[r][1]);
    } else {
      alignas(32) int32_t tmp[kGemmNR];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), acc[r][0]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + 8), acc[r][1]);
      std::memcpy(c + r * ldc, tmp, cols * sizeof(int32_t));
    }
  }
}

using TileFn = void (*)(const int16_t*, int64_t, const int16_t*, int32_t*, int64_t, int64_t);
constexpr TileFn kTiles[kMR + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>};

}  // namespace

void gemm_s16_avx2(const int16_t* a, int64_t m, int64_t kp, const int16_t* b_packed, int64_t n, int32_t* c,
                   int64_t ldc) {
  const int64_t blocks = (n + kGemmNR - 1) / kGemmNR;
  const int64_t pairs = kp / 2;
  // Rows per panel: keep the A panel (rows x kp int16) within about 128 KiB of L2.
  const int64_t panel = std::max<int64_t>(kMR, (65536 / std::max<int64_t>(kp, 1)) / kMR * kMR);
  for (int64_t i0 = 0; i0 < m; i0 += panel) {
    const int64_t i1 = std::min(m, i0 + panel);
    for (int64_t nb = 0; nb < blocks; ++nb) {
      const int16_t* bp = b_packed + nb * pairs * 2 * kGemmNR;
      const int64_t cols = std::min<int64_t>(kGemmNR, n - nb * kGemmNR);
      for (int64_t i = i0; i < i1; i += kMR) {
        const int rows = static_cast<int>(std::min<int64_t>(kMR, i1 - i));
        kTiles[rows](a + i * kp, kp, bp, c + i * ldc + nb * kGemmNR, ldc, cols);
      }
    }
  }
}

}  // namespace qnnpy
