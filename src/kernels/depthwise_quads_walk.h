// The walk of the SIMD depthwise kernels over quads of interleaved rows (kernels.h,
// DepthwiseQuads), shared by the AVX2, avxvnni and AVX-512 VNNI variants: output rows in pairs that share
// each load of z, channel blocks of one vector, the output pixels of the row with the block's
// weights held in registers where the window is one quad of 3 columns, and the scalar tail of
// channels. Each ISA supplies its vector width as a class W with
//   using V = ...;                          the vector of kLanes int32 lanes
//   static constexpr int64_t kLanes;        channels per vector
//   static V zero(); static V load(const void* p); static void store(int32_t* p, V v);
//   static V dot4(V acc, V x, V w);         acc + per lane the four u8 x s8 products of x and w
// Everything here is a template of W, so each ISA's translation unit (compiled with its own
// instruction-set flags) instantiates its own copy, as in depthwise_walk.h.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

// Channels [ch, ch + W::kLanes) of one output row (w0, a0) and, with kTwo, of the next (w1, a1).
// kQuads > 0: one group of kQuads = kw quads, known at compile time, its weights held in registers.
template <class W, int kQuads, bool kTwo>
void depthwise_quads_block(const uint8_t* z, const DepthwiseQuads& s, const int8_t* w0, const int8_t* w1, int32_t* a0,
                           int32_t* a1, int64_t ch) {
  using V = typename W::V;
  // The geometry in locals: the vector stores may alias anything, s included.
  const int64_t c = s.c, ow = s.ow, kw = s.kw, groups = s.groups, pixel = s.sw * c * 4, tap = s.dw * c * 4;
  a0 += ch;
  if (kTwo) a1 += ch;
  if constexpr (kQuads > 0) {
    V v0[kQuads], v1[kQuads];
    for (int i = 0; i < kQuads; ++i) {
      v0[i] = W::load(w0 + (i * c + ch) * 4);
      if (kTwo) v1[i] = W::load(w1 + (i * c + ch) * 4);
    }
    const uint8_t* p = z + ch * 4;
    for (int64_t ox = 0; ox < ow; ++ox, p += pixel, a0 += c, a1 += kTwo ? c : 0) {
      V s0 = W::zero(), s1 = s0;
      for (int i = 0; i < kQuads; ++i) {
        const V x = W::load(p + i * tap);
        s0 = W::dot4(s0, x, v0[i]);
        if (kTwo) s1 = W::dot4(s1, x, v1[i]);
      }
      W::store(a0, s0);
      if (kTwo) W::store(a1, s1);
    }
  } else {
    for (int64_t ox = 0; ox < ow; ++ox, a0 += c, a1 += kTwo ? c : 0) {
      V s0 = W::zero(), s1 = s0;
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t kx = 0; kx < kw; ++kx) {
          const V x = W::load(z + g * s.group_stride + ox * pixel + kx * tap + ch * 4);
          const int64_t at = ((g * kw + kx) * c + ch) * 4;
          s0 = W::dot4(s0, x, W::load(w0 + at));
          if (kTwo) s1 = W::dot4(s1, x, W::load(w1 + at));
        }
      W::store(a0, s0);
      if (kTwo) W::store(a1, s1);
    }
  }
}

// Channels [ch, ch + W::kLanes) of output row r and, when there is one, row r + 1.
template <class W>
void depthwise_quads_rows(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                          int32_t* const* acc, int r, int64_t ch) {
  const bool one_quad_of_3 = s.groups == 1 && s.kw == 3;
  if (r + 1 < rows) {
    if (one_quad_of_3) return depthwise_quads_block<W, 3, true>(z, s, w[r], w[r + 1], acc[r], acc[r + 1], ch);
    return depthwise_quads_block<W, 0, true>(z, s, w[r], w[r + 1], acc[r], acc[r + 1], ch);
  }
  if (one_quad_of_3) return depthwise_quads_block<W, 3, false>(z, s, w[r], nullptr, acc[r], nullptr, ch);
  depthwise_quads_block<W, 0, false>(z, s, w[r], nullptr, acc[r], nullptr, ch);
}

// The kernel: vector blocks of `Wide` channels, then at most one of `Narrow` (the same type where
// the ISA has one width), then the scalar tail.
template <class Wide, class Narrow>
void depthwise_quads_walk(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                          int32_t* const* acc) {
  const int64_t wide = s.c / Wide::kLanes * Wide::kLanes, narrow = s.c / Narrow::kLanes * Narrow::kLanes;
  for (int r = 0; r < rows; r += 2) {
    for (int64_t ch = 0; ch < wide; ch += Wide::kLanes) depthwise_quads_rows<Wide>(z, s, rows, w, acc, r, ch);
    for (int64_t ch = wide; ch < narrow; ch += Narrow::kLanes) depthwise_quads_rows<Narrow>(z, s, rows, w, acc, r, ch);
  }
  if (narrow < s.c) depthwise_quads_channels(z, s, rows, w, acc, narrow, s.c);
}

}  // namespace qnnpy
