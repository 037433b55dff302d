// The walk of the SIMD depthwise row kernels (kernels.h, DepthwiseRow), shared by the
// AVX2 and AVX-512 variants: the byte offsets of the taps, taken in pairs (the missing
// tap of an odd count re-reads the last one; its packed weight is 0), the output
// pixels of the row, and a scalar loop over the channels the vector blocks leave.
// Each ISA supplies the inner product as a class template Blocks<kSigned, kPairs> with
//   static int64_t run(const uint8_t* x, int64_t ow, int64_t pixel, const int64_t* off, int64_t pairs,
//                      int64_t c, const int16_t* w_pairs, int32_t* acc);
// which writes acc[ox * c + ch] = sum over taps of x[ox * pixel + off[t] + ch] * w_t[ch] for the
// output pixels [0, ow) and the channels [0, done), and returns done. It walks channel blocks
// outer and pixels inner, so that a block's weight pairs are loaded once per row (with kPairs
// known they stay in registers). Everything here is a template of
// Blocks, so each ISA's translation unit (compiled with its own instruction-set flags)
// instantiates its own copy and no code built for one ISA is shared with another.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace qnnpy {

// kPairs > 0: the number of tap pairs is a compile-time constant (3x3 and 5x5 windows),
// so the pair loop unrolls with its offsets in registers; 0: any window.
template <template <bool, int> class Blocks, bool kSigned, int kPairs>
void depthwise_walk(const uint8_t* x, const DepthwiseRow& s, const int16_t* w_pairs, int32_t* acc) {
  const int64_t taps = s.kh * s.kw, pairs = kPairs > 0 ? kPairs : (taps + 1) / 2;
  constexpr int64_t kSmallPairs = 13;  // up to 5x5 windows without a heap allocation
  int64_t off_small[2 * kSmallPairs];
  std::vector<int64_t> off_large(pairs > kSmallPairs ? static_cast<size_t>(2 * pairs) : 0);
  int64_t* off = pairs > kSmallPairs ? off_large.data() : off_small;
  for (int64_t t = 0; t < pairs * 2; ++t) {
    const int64_t tt = t < taps ? t : taps - 1;
    off[t] = (tt / s.kw) * s.dh * s.row_stride + (tt % s.kw) * s.dw * s.c;
  }
  const int64_t done = Blocks<kSigned, kPairs>::run(x, s.ow, s.sw * s.c, off, pairs, s.c, w_pairs, acc);
  for (int64_t ox = 0; ox < s.ow; ++ox) {
    const uint8_t* base = x + ox * s.sw * s.c;
    int32_t* out = acc + ox * s.c;
    for (int64_t ch = done; ch < s.c; ++ch) {
      int32_t sum = 0;
      for (int64_t t = 0; t < taps; ++t) {
        const int32_t v = kSigned ? int32_t{static_cast<int8_t>(base[off[t] + ch])} : int32_t{base[off[t] + ch]};
        sum += v * w_pairs[((t / 2) * s.c + ch) * 2 + t % 2];
      }
      out[ch] = sum;
    }
  }
}

// The row kernel of an ISA: dispatches on the input's signedness and on the window
// (9 and 25 taps get their pair count at compile time).
template <template <bool, int> class Blocks>
void depthwise_row_walk(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                        int32_t* acc) {
  const int64_t taps = s.kh * s.kw;
  if (is_signed) {
    if (taps == 9) return depthwise_walk<Blocks, true, 5>(x, s, w_pairs, acc);
    if (taps == 25) return depthwise_walk<Blocks, true, 13>(x, s, w_pairs, acc);
    return depthwise_walk<Blocks, true, 0>(x, s, w_pairs, acc);
  }
  if (taps == 9) return depthwise_walk<Blocks, false, 5>(x, s, w_pairs, acc);
  if (taps == 25) return depthwise_walk<Blocks, false, 13>(x, s, w_pairs, acc);
  return depthwise_walk<Blocks, false, 0>(x, s, w_pairs, acc);
}

}  // namespace qnnpy
