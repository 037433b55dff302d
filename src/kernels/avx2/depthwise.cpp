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

// Pair p's weights of a 16-channel block, low and high 8 channels: held in registers where the
// pair count is known at compile time (kPairs > 0), loaded from the packed pairs otherwise.
template <int kPairs>
struct HeldPairs {
  __m256i lo[kPairs], hi[kPairs];
  HeldPairs(const int16_t* w, int64_t c) {
    for (int p = 0; p < kPairs; ++p, w += c * 2) {
      lo[p] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
      hi[p] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16));
    }
  }
  __m256i low(int64_t p) const { return lo[p]; }
  __m256i high(int64_t p) const { return hi[p]; }
};
struct LoadedPairs {
  const int16_t* w;
  int64_t c;
  __m256i low(int64_t p) const { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + p * c * 2)); }
  __m256i high(int64_t p) const { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + p * c * 2 + 16)); }
};
// The pairs of the block whose weights start at w.
template <int kPairs>
auto block_pairs(const int16_t* w, int64_t c) {
  if constexpr (kPairs > 0) {
    return HeldPairs<kPairs>(w, c);
  } else {
    return LoadedPairs{w, c};
  }
}

// The 16 channels at base of every pixel of the row, `pixel` bytes apart.
template <bool kSigned, class Pairs>
inline void block_row(const uint8_t* base, int64_t ow, int64_t pixel, const int64_t* off, int64_t n,
                      const Pairs& w, int32_t* out, int64_t c) {
  for (int64_t ox = 0; ox < ow; ++ox, base += pixel, out += c) {
    __m256i lo = _mm256_setzero_si256(), hi = lo;
    for (int64_t p = 0; p < n; ++p) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p]));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + off[2 * p + 1]));
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(widen<kSigned>(_mm_unpacklo_epi8(a, b)), w.low(p)));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(widen<kSigned>(_mm_unpackhi_epi8(a, b)), w.high(p)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8), hi);
  }
}

template <bool kSigned, int kPairs>
struct Avx2Blocks {
  static int64_t run(const uint8_t* x, int64_t ow, int64_t pixel, const int64_t* off, int64_t pairs, int64_t c,
                     const int16_t* w_pairs, int32_t* acc) {
    const int64_t n = kPairs > 0 ? kPairs : pairs, c16 = c / 16 * 16;
    for (int64_t ch = 0; ch < c16; ch += 16)
      block_row<kSigned>(x + ch, ow, pixel, off, n, block_pairs<kPairs>(w_pairs + ch * 2, c), acc + ch, c);
    return c16;
  }
};

}  // namespace

void depthwise_row_avx2(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                        int32_t* acc) {
  depthwise_row_walk<Avx2Blocks>(x, s, is_signed, w_pairs, acc);
}

}  // namespace qnnpy
