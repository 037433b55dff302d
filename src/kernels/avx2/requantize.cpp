// AVX2 requantization of int32 accumulators (formula in kernels.h).
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void requantize_avx2(const int32_t* acc, int64_t m, int64_t n, int64_t ld_acc, const RequantParams& p, uint8_t* out,
                     int64_t ld_out) {
  const __m256i zp = _mm256_set1_epi32(p.zp), lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  const __m256i i16_min = _mm256_set1_epi32(INT16_MIN), i16_max = _mm256_set1_epi32(INT16_MAX);
  const int64_t vec_n = n / 8 * 8;
  for (int64_t i = 0; i < m; ++i) {
    const int32_t* row = acc + i * ld_acc;
    uint8_t* dst = out + i * ld_out;
    for (int64_t j = 0; j < vec_n; j += 8) {
      __m256i v = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + j)),
                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.ibias + j)));
      __m256 t = _mm256_add_ps(_mm256_cvtepi32_ps(v), _mm256_loadu_ps(p.fbias + j));
      __m256i y = clamp_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(t, _mm256_loadu_ps(p.mult + j))), i16_min, i16_max);
      store8_q(dst + j, clamp_epi32(_mm256_add_epi32(y, zp), lo, hi));
    }
    if (vec_n < n) {
      RequantParams tail{p.ibias + vec_n, p.fbias + vec_n, p.mult + vec_n, p.zp, p.lo, p.hi};
      requantize_scalar(row + vec_n, 1, n - vec_n, ld_acc, tail, dst + vec_n, ld_out);
    }
  }
}

}  // namespace qnnpy
