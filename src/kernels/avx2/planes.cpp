// AVX2-set planes-to-pixels interleave for 3 planes (images), 16 pixels at a time: each of
// the 48 output bytes (pixel j / 3, channel j % 3) is picked from its plane by pshufb, the
// three planes' picks OR-ed (a pick of 0x80 gives 0). Other channel counts: the scalar kernel.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

namespace {

// pick[v][ch]: for output bytes j = 16 v + i of a block, the pixel j / 3 where j % 3 == ch, else 0x80.
struct Picks {
  alignas(16) int8_t pick[3][3][16];
};
constexpr Picks make_picks() {
  Picks p{};
  for (int v = 0; v < 3; ++v)
    for (int ch = 0; ch < 3; ++ch)
      for (int i = 0; i < 16; ++i) {
        const int j = 16 * v + i;
        p.pick[v][ch][i] = static_cast<int8_t>(j % 3 == ch ? j / 3 : -128);
      }
  return p;
}
constexpr Picks kPicks = make_picks();

}  // namespace

void interleave_planes_avx2(const uint8_t* planes, int64_t plane_stride, int64_t pixels, int64_t c, uint8_t* dst) {
  if (c != 3) return interleave_planes_scalar(planes, plane_stride, pixels, c, dst);
  __m128i pick[3][3];
  for (int v = 0; v < 3; ++v)
    for (int ch = 0; ch < 3; ++ch) pick[v][ch] = _mm_load_si128(reinterpret_cast<const __m128i*>(kPicks.pick[v][ch]));
  const int64_t vec = pixels / 16 * 16;
  for (int64_t p = 0; p < vec; p += 16, dst += 48) {
    __m128i x[3];
    for (int ch = 0; ch < 3; ++ch) x[ch] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + ch * plane_stride + p));
    for (int v = 0; v < 3; ++v) {
      const __m128i out = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(x[0], pick[v][0]), _mm_shuffle_epi8(x[1], pick[v][1])),
                                       _mm_shuffle_epi8(x[2], pick[v][2]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16 * v), out);
    }
  }
  interleave_planes_scalar(planes + vec, plane_stride, pixels - vec, c, dst);
}

}  // namespace qnnpy
