// AVX2 GEMM, uint8 activations x int8 weights: vpmaddubsw forms int16 sums of two
// products, vpmaddwd with ones widens adjacent pairs into int32 (so each int32 lane
// takes 4 products per step), vpaddd accumulates. vpmaddubsw saturates its pair
// sums: the caller guarantees they fit in int16 (see runtime/u8s8_input.h), which makes
// the whole pipeline exact. Register tile: 6 rows x 16 columns; A dense (gemm_u8s8) or read
// in place in runs (gemm_u8s8_runs, kernels.h U8RowRuns). Also the byte clamp
// that prepares its input (runtime/u8s8_input.h).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/gemm_tile.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

// vpmaddubsw then vpmaddwd with ones: each int32 lane sums the four products of a uint8 quad.
void tile(const uint8_t* const* ar, const U8RowRuns& a, int rows, const int8_t* bp, int32_t* c, int64_t ldc,
          int64_t cols) {
  const __m256i ones = _mm256_set1_epi16(1);
  gemm_tile(ar, a.runs, a.run_len, a.run_stride, rows, bp, c, ldc, cols,
            [ones](__m256i av, __m256i b) { return _mm256_madd_epi16(_mm256_maddubs_epi16(av, b), ones); });
}

// Both entry points: row i of A at row(i).
template <class RowAt>
void gemm(RowAt row, const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc) {
  const int64_t kq = a.runs * a.run_len, blocks = (n + kGemmNR - 1) / kGemmNR;
  // Rows per panel: keep the A panel (rows x kq bytes) within about 64 KiB.
  const int64_t panel = std::max<int64_t>(kGemmMR, (65536 / std::max<int64_t>(kq, 1)) / kGemmMR * kGemmMR);
  for (int64_t i0 = 0; i0 < m; i0 += panel) {
    const int64_t i1 = std::min(m, i0 + panel);
    for (int64_t nb = 0; nb < blocks; ++nb) {
      const int8_t* bp = b_packed + nb * kq * kGemmNR;
      const int64_t cols = std::min<int64_t>(kGemmNR, n - nb * kGemmNR);
      for (int64_t i = i0; i < i1; i += kGemmMR) {
        const int rows = static_cast<int>(std::min<int64_t>(kGemmMR, i1 - i));
        const uint8_t* ar[kGemmMR];
        for (int r = 0; r < kGemmMR; ++r) ar[r] = row(i + std::min(r, rows - 1));
        tile(ar, a, rows, bp, c + i * ldc + nb * kGemmNR, ldc, cols);
      }
    }
  }
}

}  // namespace

void gemm_u8s8_avx2(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                    int64_t ldc) {
  gemm([a, kq](int64_t i) { return a + i * kq; }, U8RowRuns{nullptr, 1, kq, 0}, m, b_packed, n, c, ldc);
}

void gemm_u8s8_runs_avx2(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc) {
  gemm([&a](int64_t i) { return a.rows[i]; }, a, m, b_packed, n, c, ldc);
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
