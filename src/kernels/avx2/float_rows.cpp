// AVX2: attention's two float loops (kernels.h, float_dots and weighted_rows), in the scalar twin's order:
// separate multiplies and adds (no FMA), one lane per partial sum of the dot, one lane per output of the sum.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

// The eight lanes of a dot's partial sums, then the scalar twin's tail and pairwise additions. Inlined: a function
// taking a ymm argument returns without vzeroupper (GCC 12), and the SSE code after it would pay for the dirty
// upper halves on every instruction.
inline __attribute__((always_inline)) float finish_dot(__m256 acc, const float* x, const float* y, int64_t i, int64_t n) {
  alignas(32) float part[8];
  _mm256_store_ps(part, acc);
  for (int l = 0; i < n; ++i, ++l) part[l] += x[i] * y[i];
  for (int l = 0; l < 4; ++l) part[l] += part[l + 4];
  for (int l = 0; l < 2; ++l) part[l] += part[l + 2];
  return part[0] + part[1];
}

}  // namespace

void float_dots_avx2(const float* x, const float* rows, int64_t ld, int64_t count, int64_t n, float* out) {
  const int64_t n8 = n / 8 * 8;
  int64_t j = 0;
  for (; j + 4 <= count; j += 4) {  // four rows at a time: x is loaded once for them
    const float* y0 = rows + j * ld;
    const float *y1 = y0 + ld, *y2 = y1 + ld, *y3 = y2 + ld;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n8; i += 8) {
      const __m256 xv = _mm256_loadu_ps(x + i);
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(xv, _mm256_loadu_ps(y0 + i)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(xv, _mm256_loadu_ps(y1 + i)));
      a2 = _mm256_add_ps(a2, _mm256_mul_ps(xv, _mm256_loadu_ps(y2 + i)));
      a3 = _mm256_add_ps(a3, _mm256_mul_ps(xv, _mm256_loadu_ps(y3 + i)));
    }
    out[j] = finish_dot(a0, x, y0, n8, n);
    out[j + 1] = finish_dot(a1, x, y1, n8, n);
    out[j + 2] = finish_dot(a2, x, y2, n8, n);
    out[j + 3] = finish_dot(a3, x, y3, n8, n);
  }
  for (; j < count; ++j) {
    const float* y = rows + j * ld;
    __m256 a = _mm256_setzero_ps();
    for (int64_t i = 0; i < n8; i += 8) a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    out[j] = finish_dot(a, x, y, n8, n);
  }
}

void weighted_rows_avx2(const float* w, const float* rows, int64_t ld, int64_t count, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // 32 outputs held in registers over all the rows
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t j = 0; j < count; ++j) {
      if (w[j] == 0.0f) continue;
      const __m256 wv = _mm256_set1_ps(w[j]);
      const float* row = rows + j * ld + i;
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(wv, _mm256_loadu_ps(row)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(wv, _mm256_loadu_ps(row + 8)));
      a2 = _mm256_add_ps(a2, _mm256_mul_ps(wv, _mm256_loadu_ps(row + 16)));
      a3 = _mm256_add_ps(a3, _mm256_mul_ps(wv, _mm256_loadu_ps(row + 24)));
    }
    _mm256_storeu_ps(out + i, a0);
    _mm256_storeu_ps(out + i + 8, a1);
    _mm256_storeu_ps(out + i + 16, a2);
    _mm256_storeu_ps(out + i + 24, a3);
  }
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_setzero_ps();
    for (int64_t j = 0; j < count; ++j) {
      if (w[j] != 0.0f) a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_set1_ps(w[j]), _mm256_loadu_ps(rows + j * ld + i)));
    }
    _mm256_storeu_ps(out + i, a);
  }
  if (i < n) weighted_rows_scalar(w, rows + i, ld, count, n - i, out + i);
}

}  // namespace qnnpy
