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

// Pair p's weights of a 32-channel block (low and high 16 channels) or of a 16-channel one (low):
// held in registers where the pair count is known at compile time (kPairs > 0), loaded from the
// packed pairs otherwise.
template <int kPairs, bool kHigh>
struct HeldPairs {
  __m512i lo[kPairs], hi[kHigh ? kPairs : 1];
  HeldPairs(const int16_t* w, int64_t c) {
    for (int p = 0; p < kPairs; ++p, w += c * 2) {
      lo[p] = _mm512_loadu_si512(w);
      if (kHigh) hi[p] = _mm512_loadu_si512(w + 32);
    }
  }
  __m512i low(int64_t p) const { return lo[p]; }
  __m512i high(int64_t p) const { return hi[kHigh ? p : 0]; }
};
struct LoadedPairs {
  const int16_t* w;
  int64_t c;
  __m512i low(int64_t p) const { return _mm512_loadu_si512(w + p * c * 2); }
  __m512i high(int64_t p) const { return _mm512_loadu_si512(w + p * c * 2 + 32); }
};
// The pairs of the block whose weights start at w.
template <int kPairs, bool kHigh>
auto block_pairs(const int16_t* w, int64_t c) {
  if constexpr (kPairs > 0) {
    return HeldPairs<kPairs, kHigh>(w, c);
  } else {
    return LoadedPairs{w, c};
  }
}

// The 32 channels at base of every pixel of the row, `pixel` bytes apart.
template <bool kSigned, class Pairs>
inline void block32_row(const uint8_t* base, int64_t ow, int64_t pixel, const int64_t* off, int64_t n,
                        const Pairs& w, int32_t* out, int64_t c) {
  for (int64_t ox = 0; ox < ow; ++ox, base += pixel, out += c) {
    __m512i lo = _mm512_setzero_si512(), hi = lo;
    for (int64_t p = 0; p < n; ++p) {
      const __m256i a =
          _mm256_permute4x64_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + off[2 * p])), 0xD8);
      const __m256i b =
          _mm256_permute4x64_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + off[2 * p + 1])), 0xD8);
      lo = _mm512_dpwssd_epi32(lo, widen<kSigned>(_mm256_unpacklo_epi8(a, b)), w.low(p));
      hi = _mm512_dpwssd_epi32(hi, widen<kSigned>(_mm256_unpackhi_epi8(a, b)), w.high(p));
    }
    _mm512_storeu_si512(out, lo);
    _mm512_storeu_si512(out + 16, hi);
  }
}

// The 16 channels at base of every pixel of the row.
template <bool kSigned, class Pairs>
inline void block16_row(const uint8_t* base, int64_t ow, int64_t pixel, const int64_t* off, int64_t n,
                        const Pairs& w, int32_t* out, int64_t c) {
  for (int64_t ox = 0; ox < ow; ++ox, base += pixel, out += c) {
    __m512i sum = _mm512_setzero_si512();
    for (int64_t p = 0; p < n; ++p) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p]));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p + 1]));
      const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(a, b)),
                                                 _mm_unpackhi_epi8(a, b), 1);
      sum = _mm512_dpwssd_epi32(sum, widen<kSigned>(ab), w.low(p));
    }
    _mm512_storeu_si512(out, sum);
  }
}

template <bool kSigned, int kPairs>
struct Avx512Blocks {
  static int64_t run(const uint8_t* x, int64_t ow, int64_t pixel, const int64_t* off, int64_t pairs, int64_t c,
                     const int16_t* w_pairs, int32_t* acc) {
    const int64_t n = kPairs > 0 ? kPairs : pairs, c32 = c / 32 * 32, c16 = c / 16 * 16;
    for (int64_t ch = 0; ch < c32; ch += 32)
      block32_row<kSigned>(x + ch, ow, pixel, off, n, block_pairs<kPairs, true>(w_pairs + ch * 2, c), acc + ch, c);
    for (int64_t ch = c32; ch < c16; ch += 16)
      block16_row<kSigned>(x + ch, ow, pixel, off, n, block_pairs<kPairs, false>(w_pairs + ch * 2, c), acc + ch, c);
    return c16;
  }
};

}  // namespace

void depthwise_row_avx512vnni(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                              int32_t* acc) {
  depthwise_row_walk<Avx512Blocks>(x, s, is_signed, w_pairs, acc);
}

}  // namespace qnnpy
