// AVX-512 VNNI depthwise row kernel, 32 channels at a time. For each pair of taps,
// the two taps' 32 input bytes are interleaved per channel (vpermq puts channels 0-7
// and 16-23 in the low 128-bit lane so that vpunpck{l,h}bw yield channels 0-15 and
// 16-31 in order), widened to int16 pairs (x_t1[c], x_t2[c]) and multiplied with the
// weight pairs (w_t1[c], w_t2[c]) by vpdpwssd, which adds x_t1 w_t1 + x_t2 w_t2 to the
// int32 lane without saturation (vpdpwssds is the saturating form). Exact: |x| <= 255
// and |w| <= 255, so a pair sum is below 2^17, as in the scalar twin's int32 sums.
// 16-channel steps cover the rest down to 16; the taps, pixels and the channels left
// over are walked by kernels/depthwise_walk.h.
#include <immintrin.h>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/depthwise_walk.h"

namespace qnnpy {
namespace {

template <bool kSigned>
inline __m512i widen(__m256i v) {
  return kSigned ? _mm512_cvtepi8_epi16(v) : _mm512_cvtepu8_epi16(v);
}

template <bool kSigned, int kPairs>
struct Avx512Blocks {
  static int64_t run(const uint8_t* base, const int64_t* off, int64_t pairs, int64_t c, const int16_t* w_pairs,
                     int32_t* out) {
    const int64_t n = kPairs > 0 ? kPairs : pairs, c32 = c / 32 * 32, c16 = c / 16 * 16;
    for (int64_t ch = 0; ch < c32; ch += 32) {
      __m512i lo = _mm512_setzero_si512(), hi = lo;
      const int16_t* w = w_pairs + ch * 2;
      for (int64_t p = 0; p < n; ++p, w += c * 2) {
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
      for (int64_t p = 0; p < n; ++p, w += c * 2) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p] + ch));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p + 1] + ch));
        const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(a, b)),
                                                   _mm_unpackhi_epi8(a, b), 1);
        sum = _mm512_dpwssd_epi32(sum, widen<kSigned>(ab), _mm512_loadu_si512(w));
      }
      _mm512_storeu_si512(out + ch, sum);
    }
    return c16;
  }
};

}  // namespace

void depthwise_row_avx512vnni(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                              int32_t* acc) {
  depthwise_row_walk<Avx512Blocks>(x, s, is_signed, w_pairs, acc);
}

}  // namespace qnnpy
