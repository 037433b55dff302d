// AVX2 quantized batch norm (NHWC rows): 8 channels per step, the scalar twin for the rest.
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void batch_norm_avx2(const uint8_t* x, int64_t pixels, int64_t c, bool is_signed, const BatchNormParams& p,
                     uint8_t* out) {
  const int64_t vector_channels = c / 8 * 8;
  const __m256i in_zp = _mm256_set1_epi32(p.in_zp), out_zp = _mm256_set1_epi32(p.out_zp);
  const __m256i lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  for (int64_t i = 0; i < pixels; ++i) {
    const uint8_t* row = x + i * c;
    uint8_t* dst = out + i * c;
    for (int64_t ch = 0; ch < vector_channels; ch += 8) {
      const __m256 v = _mm256_cvtepi32_ps(_mm256_sub_epi32(load8_q(row + ch, is_signed), in_zp));
      const __m256 y = _mm256_fmadd_ps(_mm256_loadu_ps(p.alpha + ch), v, _mm256_loadu_ps(p.beta + ch));
      store8_q(dst + ch, clamp_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(y), out_zp), lo, hi));
    }
    for (int64_t ch = vector_channels; ch < c; ++ch) {
      store_q(dst, ch, batch_norm_one(load_q(row, ch, is_signed), p.alpha[ch], p.beta[ch], p, false));
    }
  }
}

}  // namespace qnnpy
