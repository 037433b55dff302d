// AVX2 depthwise row kernel, 16 channels at a time. For each pair of taps, the two
// taps' 16 input bytes are interleaved per channel (vpunpck{l,h}bw), widened to int16
// pairs (x_t1[c], x_t2[c]) and multiplied with the weight pairs (w_t1[c], w_t2[c]) by
// vpmaddwd, giving x_t1 w_t1 + x_t2 w_t2 per channel in int32. Exact: |x| <= 255 and
// |w| <= 255 (int8 weights minus their zero point), so a pair sum is below 2^17.
#include <immintrin.h>

#include <vector>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

template <bool kSigned>
inline __m256i widen(__m128i v) {
  return kSigned ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

// kPairs > 0: the number of tap pairs is a compile-time constant (3x3 and 5x5 windows),
// so the pair loop unrolls with its offsets in registers; 0: any window.
template <bool kSigned, int kPairs>
void row(const uint8_t* x, const DepthwiseRow& s, const int16_t* w_pairs, int32_t* acc) {
  const int64_t taps = s.kh * s.kw, pairs = kPairs > 0 ? kPairs : (taps + 1) / 2, vec_c = s.c / 16 * 16;
  int64_t off_small[2 * 13];
  std::vector<int64_t> off_large(pairs > 13 ? static_cast<size_t>(2 * pairs) : 0);
  int64_t* off = pairs > 13 ? off_large.data() : off_small;
  for (int64_t t = 0; t < pairs * 2; ++t) {
    const int64_t tt = t < taps ? t : taps - 1;  // the missing tap re-reads the last one (its weight is 0)
    off[t] = (tt / s.kw) * s.dh * s.row_stride + (tt % s.kw) * s.dw * s.c;
  }
  for (int64_t ox = 0; ox < s.ow; ++ox) {
    const uint8_t* base = x + ox * s.sw * s.c;
    int32_t* out = acc + ox * s.c;
    for (int64_t ch = 0; ch < vec_c; ch += 16) {
      __m256i lo = _mm256_setzero_si256(), hi = lo;
      const int16_t* w = w_pairs + ch * 2;
      for (int64_t p = 0; p < pairs; ++p, w += s.c * 2) {
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
    for (int64_t ch = vec_c; ch < s.c; ++ch) {
      int32_t sum = 0;
      for (int64_t t = 0; t < taps; ++t) {
        const int32_t v = kSigned ? int32_t{static_cast<int8_t>(base[off[t] + ch])} : int32_t{base[off[t] + ch]};
        sum += v * w_pairs[((t / 2) * s.c + ch) * 2 + t % 2];
      }
      out[ch] = sum;
    }
  }
}

template <bool kSigned>
void row_any(const uint8_t* x, const DepthwiseRow& s, const int16_t* w_pairs, int32_t* acc) {
  switch (s.kh * s.kw) {
    case 9:
      return row<kSigned, 5>(x, s, w_pairs, acc);
    case 25:
      return row<kSigned, 13>(x, s, w_pairs, acc);
    default:
      return row<kSigned, 0>(x, s, w_pairs, acc);
  }
}

}  // namespace

void depthwise_row_avx2(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                        int32_t* acc) {
  if (is_signed) {
    row_any<true>(x, s, w_pairs, acc);
  } else {
    row_any<false>(x, s, w_pairs, acc);
  }
}

}  // namespace qnnpy
