// AVX2 depthwise row kernel, 16 channels at a time. For each pair of taps, the two
// taps' 16 input bytes are interleaved per channel (vpunpck{l,h}bw), widened to int16
// pairs (x_t1[c], x_t2[c]) and multiplied with the weight pairs (w_t1[c], w_t2[c]) by
// vpmaddwd, giving x_t1 w_t1 + x_t2 w_t2 per channel in int32. Exact: |x| <= 255 and
// |w| <= 255 (int8 weights minus their zero point), so a pair sum is below 2^17.
// The taps, pixels and the channels left over are walked by kernels/depthwise_walk.h.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/depthwise_walk.h"

namespace qnnpy {
namespace {

template <bool kSigned>
inline __m256i widen(__m128i v) {
  return kSigned ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

template <bool kSigned, int kPairs>
struct Avx2Blocks {
  static int64_t run(const uint8_t* base, const int64_t* off, int64_t pairs, int64_t c, const int16_t* w_pairs,
                     int32_t* out) {
    const int64_t n = kPairs > 0 ? kPairs : pairs, c16 = c / 16 * 16;
    for (int64_t ch = 0; ch < c16; ch += 16) {
      __m256i lo = _mm256_setzero_si256(), hi = lo;
      const int16_t* w = w_pairs + ch * 2;
      for (int64_t p = 0; p < n; ++p, w += c * 2) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p] + ch));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p + 1] + ch));
        const __m256i wl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
        const __m256i wh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16));
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(widen<kSigned>(_mm_unpacklo_epi8(a, b)), wl));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(widen<kSigned>(_mm_unpackhi_epi8(a, b)), wh));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + ch), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + ch + 8), hi);
    }
    return c16;
  }
};

}  // namespace

void depthwise_row_avx2(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                        int32_t* acc) {
  depthwise_row_walk<Avx2Blocks>(x, s, is_signed, w_pairs, acc);
}

}  // namespace qnnpy
