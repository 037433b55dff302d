// AVX2 GEMM, uint8 activations x int8 weights: vpmaddubsw forms int16 sums of two
// products, vpmaddwd with ones widens adjacent pairs into int32 (so each int32 lane
// takes 4 products per step), vpaddd accumulates. vpmaddubsw saturates its pair
// sums: the caller guarantees they fit in int16 (see runtime/u8s8_input.h), which makes
// the whole pipeline exact. Register tile: 6 rows x 16 columns. Also the byte clamp
// that prepares its input (runtime/u8s8_input.h).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/gemm_tile.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

// Rows beyond `rows` re-read the last valid row; their results are not stored.
void tile(const uint8_t* a, int64_t kq, int rows, const int8_t* bp, int32_t* c, int64_t ldc, int64_t cols) {
  const uint8_t* a0 = a;
  const uint8_t* a1 = rows > 1 ? a0 + kq : a0;
  const uint8_t* a2 = rows > 2 ? a1 + kq : a1;
  const uint8_t* a3 = rows > 3 ? a2 + kq : a2;
  const uint8_t* a4 = rows > 4 ? a3 + kq : a3;
  const uint8_t* a5 = rows > 5 ? a4 + kq : a4;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256i c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t q = 0; q < kq; q += 4, bp += 4 * kGemmNR) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + 32));
    __m256i av = broadcast_4_bytes(a0 + q);
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
    c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
    av = broadcast_4_bytes(a1 + q);
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
    c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
    av = broadcast_4_bytes(a2 + q);
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
    c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
    av = broadcast_4_bytes(a3 + q);
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
    c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
    av = broadcast_4_bytes(a4 + q);
    c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
    c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
    av = broadcast_4_bytes(a5 + q);
    c50 = _mm256_add_epi32(c50, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
    c51 = _mm256_add_epi32(c51, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
  }
  store_tile_row(c, c00, c01, cols);
  if (rows > 1) store_tile_row(c + ldc, c10, c11, cols);
  if (rows > 2) store_tile_row(c + 2 * ldc, c20, c21, cols);
  if (rows > 3) store_tile_row(c + 3 * ldc, c30, c31, cols);
  if (rows > 4) store_tile_row(c + 4 * ldc, c40, c41, cols);
  if (rows > 5) store_tile_row(c + 5 * ldc, c50, c51, cols);
}

}  // namespace

void gemm_u8s8_avx2(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                    int64_t ldc) {
  const int64_t blocks = (n + kGemmNR - 1) / kGemmNR;
  // Rows per panel: keep the A panel (rows x kq bytes) within about 64 KiB.
  const int64_t panel = std::max<int64_t>(kGemmMR, (65536 / std::max<int64_t>(kq, 1)) / kGemmMR * kGemmMR);
  for (int64_t i0 = 0; i0 < m; i0 += panel) {
    const int64_t i1 = std::min(m, i0 + panel);
    for (int64_t nb = 0; nb < blocks; ++nb) {
      const int8_t* bp = b_packed + nb * kq * kGemmNR;
      const int64_t cols = std::min<int64_t>(kGemmNR, n - nb * kGemmNR);
      for (int64_t i = i0; i < i1; i += kGemmMR) {
        tile(a + i * kq, kq, static_cast<int>(std::min<int64_t>(kGemmMR, i1 - i)), bp, c + i * ldc + nb * kGemmNR, ldc,
             cols);
      }
    }
  }
}

int64_t clamp_u8_avx2(const uint8_t* x, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags) {
  static_assert(kClampBlock == 32, "one AVX2 vector per block");
  const __m256i vb = _mm256_set1_epi8(static_cast<char>(bound));
  int64_t flagged = 0, b = 0;
  for (; (b + 1) * kClampBlock <= n; ++b) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + b * kClampBlock));
    const __m256i c = _mm256_min_epu8(v, vb);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * kClampBlock), c);
    flags[b] = _mm256_movemask_epi8(_mm256_cmpeq_epi8(c, v)) != -1;
    flagged += flags[b];
  }
  if (b * kClampBlock < n) {
    flagged += clamp_u8_scalar(x + b * kClampBlock, n - b * kClampBlock, bound, out + b * kClampBlock, flags + b);
  }
  return flagged;
}

}  // namespace qnnpy
