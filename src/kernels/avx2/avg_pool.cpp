// AVX2 avg_pool2d (NHWC storage): 8 channels per step, the scalar twin for the rest.
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void avg_pool2d_avx2(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out) {
  const int64_t vector_channels = s.c / 8 * 8;
  const __m256i vzp = _mm256_set1_epi32(p.zp), vlo = _mm256_set1_epi32(p.lo), vhi = _mm256_set1_epi32(p.hi);
  const __m256 fzp = _mm256_set1_ps(static_cast<float>(p.zp));
  const bool nchw_rule = p.rule == AvgPool2dRule::Nchw;
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const AvgPoolTaps t = avg_pool_taps(s, p, oy, ox);
        const __m256 vmult = _mm256_set1_ps(t.vector_mult);
        const __m256i offset = _mm256_set1_epi32(p.zp * t.taps);
        uint8_t* dst = out + ((b * s.oh + oy) * s.ow + ox) * s.c;
        for (int64_t ch = 0; ch < vector_channels; ch += 8) {
          __m256i sum = _mm256_setzero_si256();
          for (int64_t iy = t.y.start; iy < t.y.end; ++iy)
            for (int64_t ix = t.x.start; ix < t.x.end; ++ix) {
              sum = _mm256_add_epi32(sum, load8_q(x + ((b * s.h + iy) * s.w + ix) * s.c + ch, is_signed));
            }
          const __m256 scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sum, offset)), vmult);
          // cvtps rounds half to even like nearbyint; the Nchw rule adds the zero point in float first.
          const __m256i y = nchw_rule ? _mm256_cvtps_epi32(_mm256_add_ps(scaled, fzp))
                                      : _mm256_add_epi32(_mm256_cvtps_epi32(scaled), vzp);
          store8_q(dst + ch, clamp_epi32(y, vlo, vhi));
        }
        for (int64_t ch = vector_channels; ch < s.c; ++ch) {
          int32_t sum = 0;
          for (int64_t iy = t.y.start; iy < t.y.end; ++iy)
            for (int64_t ix = t.x.start; ix < t.x.end; ++ix) sum += load_q(x, ((b * s.h + iy) * s.w + ix) * s.c + ch, is_signed);
          store_q(dst, ch, avg_pool2d_output(sum - p.zp * t.taps, t.tail_mult, p));
        }
      }
}

}  // namespace qnnpy
