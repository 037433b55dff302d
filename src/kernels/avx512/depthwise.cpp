// AVX-512 VNNI depthwise row kernel, 32 channels at a time. For each pair of taps,
// the two taps' 32 input bytes are interleaved per channel (vpermq puts channels 0-7
// and 16-23 in the low 128-bit lane so that vpunpck{l,h}bw yield channels 0-15 and
// 16-31 in order), widened to int16 pairs (x_t1[c], x_t2[c]) and multiplied with the
// weight pairs (w_t1[c], w_t2[c]) by vpdpwssd, which adds x_t1 w_t1 + x_t2 w_t2 to the
// int32 lane without saturation (vpdpwssds is the saturating form). Exact: |x| <= 255
// and |w| <= 255, so a pair sum is below 2^17, as in the scalar twin's int32 sums.
// 16-channel steps cover the rest down to 16, and a scalar loop the last channels.
#include <immintrin.h>

#include <vector>

#include "kernels/avx512/avx512_kernels.h"

namespace qnnpy {
namespace {

template <bool kSigned>
inline __m512i widen(__m256i v) {
  return kSigned ? _mm512_cvtepi8_epi16(v) : _mm512_cvtepu8_epi16(v);
}

// kPairs > 0: the number of tap pairs is a compile-time constant (3x3 and 5x5 windows),
// so the pair loop unrolls with its offsets in registers; 0: any window.
template <bool kSigned, int kPairs>
void row(const uint8_t* x, const DepthwiseRow& s, const int16_t* w_pairs, int32_t* acc) {
  const int64_t taps = s.kh * s.kw, pairs = kPairs > 0 ? kPairs : (taps + 1) / 2;
  const int64_t c32 = s.c / 32 * 32, c16 = s.c / 16 * 16;
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
    for (int64_t ch = 0; ch < c32; ch += 32) {
      __m512i lo = _mm512_setzero_si512(), hi = lo;
      const int16_t* w = w_pairs + ch * 2;
      for (int64_t p = 0; p < pairs; ++p, w += s.c * 2) {
        const __m256i a = _mm256_permute4x64_epi64(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + off[2 * p] + ch)), 0xD8);
        const __m256i b = _mm256_permute4x64_epi64(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + off[2 * p + 1] + ch)), 0xD8);
        lo = _mm512_dpwssd_epi32(lo, widen<kSigned>(_mm256_unpacklo_epi8(a, b)), _mm512_loadu_si512(w));
        hi = _mm512_dpwssd_epi32(hi, widen<kSigned>(_mm256_unpackhi_epi8(a, b)), _mm512_loadu_si512(w + 32));
      }
      _mm512_storeu_si512(out + ch, lo);
      _mm512_storeu_si512(out + ch + 16, hi);
    }
    for (int64_t ch = c32; ch < c16; ch += 16) {
      __m512i sum = _mm512_setzero_si512();
      const int16_t* w = w_pairs + ch * 2;
      for (int64_t p = 0; p < pairs; ++p, w += s.c * 2) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p] + ch));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p + 1] + ch));
        const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(a, b)),
                                                   _mm_unpackhi_epi8(a, b), 1);
        sum = _mm512_dpwssd_epi32(sum, widen<kSigned>(ab), _mm512_loadu_si512(w));
      }
      _mm512_storeu_si512(out + ch, sum);
    }
    for (int64_t ch = c16; ch < s.c; ++ch) {
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

void depthwise_row_avx512vnni(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                              int32_t* acc) {
  if (is_signed) {
    row_any<true>(x, s, w_pairs, acc);
  } else {
    row_any<false>(x, s, w_pairs, acc);
  }
}

}  // namespace qnnpy
