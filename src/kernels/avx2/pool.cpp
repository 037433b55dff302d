// AVX2 pooling kernels (NHWC), vectorized across channels.

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/max_pool_walk.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

namespace {

// Max over the in-bounds taps only, as the scalar twin: 32 channels per step, then the channels left one by one.
template <bool kSigned>
void max_pool2d_blocks(const uint8_t* x, const Pool2dShape& s, uint8_t* out) {
  const int64_t vec_c = s.c / 32 * 32;
  const __m256i lowest = _mm256_set1_epi8(kSigned ? -128 : 0);
  for_each_max_pool_window(x, s, out, [&](const MaxPoolWindow& win, uint8_t* dst) {
    for (int64_t ch = 0; ch < vec_c; ch += 32) {
      __m256i best = lowest;
      for (int64_t ky = win.ky0; ky < win.ky1; ++ky) {
        const uint8_t* row = win.row(s, ky) + ch;
        for (int64_t kx = win.kx0; kx < win.kx1; ++kx) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + win.column(s, kx)));
          best = kSigned ? _mm256_max_epi8(best, v) : _mm256_max_epu8(best, v);
        }
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + ch), best);
    }
    max_pool_channels_left<kSigned>(win, s, vec_c, dst);
  });
}

}  // namespace

void max_pool2d_avx2(const uint8_t* x, const Pool2dShape& s, bool is_signed, uint8_t* out) {
  if (is_signed) return max_pool2d_blocks<true>(x, s, out);
  max_pool2d_blocks<false>(x, s, out);
}

void adaptive_avg_pool2d_avx2(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AdaptivePoolParams& p,
                              uint8_t* out) {
  const int32_t zp = p.rule == AvgPoolRule::FbgemmNchw ? 0 : p.zp;
  const int64_t vec_c = s.c / 8 * 8;
  const __m256i vzp = _mm256_set1_epi32(zp), vlo = _mm256_set1_epi32(p.lo), vhi = _mm256_set1_epi32(p.hi);
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      const int64_t y0 = adaptive_start(oy, s.h, s.oh), y1 = adaptive_end(oy, s.h, s.oh);
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const int64_t x0 = adaptive_start(ox, s.w, s.ow), x1 = adaptive_end(ox, s.w, s.ow);
        const int32_t count = static_cast<int32_t>((y1 - y0) * (x1 - x0));
        const float mult = adaptive_multiplier(p, y1 - y0, x1 - x0);
        const __m256 vmult = _mm256_set1_ps(mult);
        const __m256i offset = _mm256_set1_epi32(zp * count);
        uint8_t* dst = out + ((b * s.oh + oy) * s.ow + ox) * s.c;
        for (int64_t ch = 0; ch < vec_c; ch += 8) {
          __m256i sum = _mm256_setzero_si256();
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) {
              sum = _mm256_add_epi32(sum, load8_q(x + ((b * s.h + iy) * s.w + ix) * s.c + ch, is_signed));
            }
          const __m256 acc = _mm256_cvtepi32_ps(_mm256_sub_epi32(sum, offset));
          const __m256i y = _mm256_cvtps_epi32(_mm256_mul_ps(acc, vmult));
          store8_q(dst + ch, clamp_epi32(_mm256_add_epi32(y, vzp), vlo, vhi));
        }
        for (int64_t ch = vec_c; ch < s.c; ++ch) {
          int32_t sum = 0;
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) sum += load_q(x, ((b * s.h + iy) * s.w + ix) * s.c + ch, is_signed);
          store_q(dst, ch, avg_pool_output(sum, count, mult, zp, p.lo, p.hi));
        }
      }
    }
}

}  // namespace qnnpy
