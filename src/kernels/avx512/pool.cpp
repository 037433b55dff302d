// AVX-512 pooling kernels (NHWC), the zmm forms of avx2/pool.cpp and avx2/avg_pool.cpp,
// vectorized across channels: max pool 64 channels per step, the average pools 16; the
// last channels run under a lane mask (masked loads read nothing past the channels).
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as the unused merge operand,
// which it then reports as uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/max_pool_walk.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

inline __mmask16 first_lanes16(int64_t k) { return k >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << k) - 1); }
inline __mmask64 first_lanes64(int64_t k) { return k >= 64 ? ~__mmask64{0} : (__mmask64{1} << k) - 1; }

// The channels [ch, ch + 16) of lanes `m` at p, widened to int32 (other lanes 0).
inline __m512i load16_q(const uint8_t* p, bool is_signed, __mmask16 m) {
  const __m128i v = _mm_maskz_loadu_epi8(m, p);
  return is_signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}

inline __m512i clamp(__m512i v, __m512i lo, __m512i hi) { return _mm512_min_epi32(_mm512_max_epi32(v, lo), hi); }

// Max over the in-bounds taps only, as the scalar twin.
template <bool kSigned>
void max_pool2d_blocks(const uint8_t* x, const Pool2dShape& s, uint8_t* out) {
  const __m512i lowest = _mm512_set1_epi8(kSigned ? -128 : 0);
  for_each_max_pool_window(x, s, out, [&](const MaxPoolWindow& win, uint8_t* dst) {
    for (int64_t ch = 0; ch < s.c; ch += 64) {
      const __mmask64 lanes = first_lanes64(s.c - ch);
      __m512i best = lowest;
      for (int64_t ky = win.ky0; ky < win.ky1; ++ky) {
        const uint8_t* row = win.row(s, ky) + ch;
        for (int64_t kx = win.kx0; kx < win.kx1; ++kx) {
          const __m512i v = _mm512_mask_loadu_epi8(lowest, lanes, row + win.column(s, kx));
          best = kSigned ? _mm512_max_epi8(best, v) : _mm512_max_epu8(best, v);
        }
      }
      _mm512_mask_storeu_epi8(dst + ch, lanes, best);
    }
  });
}

}  // namespace

void max_pool2d_avx512(const uint8_t* x, const Pool2dShape& s, bool is_signed, uint8_t* out) {
  if (is_signed) return max_pool2d_blocks<true>(x, s, out);
  max_pool2d_blocks<false>(x, s, out);
}

// Every channel takes the same formula (avg_pool_output), so the last ones need no scalar loop.
void adaptive_avg_pool2d_avx512(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AdaptivePoolParams& p,
                                uint8_t* out) {
  const int32_t zp = p.rule == AvgPoolRule::FbgemmNchw ? 0 : p.zp;
  const __m512i vzp = _mm512_set1_epi32(zp), vlo = _mm512_set1_epi32(p.lo), vhi = _mm512_set1_epi32(p.hi);
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      const int64_t y0 = adaptive_start(oy, s.h, s.oh), y1 = adaptive_end(oy, s.h, s.oh);
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const int64_t x0 = adaptive_start(ox, s.w, s.ow), x1 = adaptive_end(ox, s.w, s.ow);
        const int32_t count = static_cast<int32_t>((y1 - y0) * (x1 - x0));
        const __m512 vmult = _mm512_set1_ps(adaptive_multiplier(p, y1 - y0, x1 - x0));
        const __m512i offset = _mm512_set1_epi32(zp * count);
        uint8_t* dst = out + ((b * s.oh + oy) * s.ow + ox) * s.c;
        for (int64_t ch = 0; ch < s.c; ch += 16) {
          const __mmask16 lanes = first_lanes16(s.c - ch);
          __m512i sum = _mm512_setzero_si512();
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) {
              sum = _mm512_add_epi32(sum, load16_q(x + ((b * s.h + iy) * s.w + ix) * s.c + ch, is_signed, lanes));
            }
          const __m512i y = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sum, offset)), vmult));
          _mm512_mask_cvtepi32_storeu_epi8(dst + ch, lanes, clamp(_mm512_add_epi32(y, vzp), vlo, vhi));
        }
      }
    }
}

// The channels [0, 8 floor(c / 8)) take the vector multiplier and the rest the tail one
// (kernels.h AvgPool2dRule), whatever the register width: 16-channel steps, then at most
// one 8-channel step, then the tail channels, each under its lane mask.
void avg_pool2d_avx512(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out) {
  const int64_t vector_channels = s.c / 8 * 8;
  const __m512i vzp = _mm512_set1_epi32(p.zp), vlo = _mm512_set1_epi32(p.lo), vhi = _mm512_set1_epi32(p.hi);
  const __m512 fzp = _mm512_set1_ps(static_cast<float>(p.zp));
  const bool nchw_rule = p.rule == AvgPool2dRule::Nchw;
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const AvgPoolTaps t = avg_pool_taps(s, p, oy, ox);
        const __m512i offset = _mm512_set1_epi32(p.zp * t.taps);
        uint8_t* dst = out + ((b * s.oh + oy) * s.ow + ox) * s.c;
        for (int64_t ch = 0; ch < s.c;) {
          const int64_t end = ch < vector_channels ? vector_channels : s.c;
          const int64_t step = end - ch < 16 ? end - ch : 16;
          const __mmask16 lanes = first_lanes16(step);
          __m512i sum = _mm512_setzero_si512();
          for (int64_t iy = t.y.start; iy < t.y.end; ++iy)
            for (int64_t ix = t.x.start; ix < t.x.end; ++ix) {
              sum = _mm512_add_epi32(sum, load16_q(x + ((b * s.h + iy) * s.w + ix) * s.c + ch, is_signed, lanes));
            }
          const __m512 vmult = _mm512_set1_ps(ch < vector_channels ? t.vector_mult : t.tail_mult);
          const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sum, offset)), vmult);
          // cvtps rounds half to even like nearbyint; the Nchw rule adds the zero point in float first.
          const __m512i y = nchw_rule ? _mm512_cvtps_epi32(_mm512_add_ps(scaled, fzp))
                                      : _mm512_add_epi32(_mm512_cvtps_epi32(scaled), vzp);
          _mm512_mask_cvtepi32_storeu_epi8(dst + ch, lanes, clamp(y, vlo, vhi));
          ch += step;
        }
      }
}

}  // namespace qnnpy
