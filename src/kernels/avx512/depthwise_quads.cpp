// AVX-512 VNNI depthwise conv over quads of interleaved input rows (kernels.h, DepthwiseQuads):
// vpdpbusd adds each lane's four u8 x s8 products straight into int32, exact for any byte (no
// int16 pair sums, so the input needs no clamp). 16 channels per zmm, then 8 per ymm (AVX-512 VL),
// then the scalar tail; two output rows share each load of z, and a channel block's weights stay
// in registers along the row.
#include <immintrin.h>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

// One vector width: 16 channels (zmm) or 8 (ymm).
struct Zmm {
  using V = __m512i;
  static constexpr int64_t kLanes = 16;
  static V zero() { return _mm512_setzero_si512(); }
  static V load(const void* p) { return _mm512_loadu_si512(p); }
  static void store(int32_t* p, V v) { _mm512_storeu_si512(p, v); }
  static V dot4(V acc, V x, V w) { return _mm512_dpbusd_epi32(acc, x, w); }
};

struct Ymm {
  using V = __m256i;
  static constexpr int64_t kLanes = 8;
  static V zero() { return _mm256_setzero_si256(); }
  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(int32_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static V dot4(V acc, V x, V w) { return _mm256_dpbusd_epi32(acc, x, w); }
};

// Channels [ch, ch + kLanes) of one output row (w0, a0) and, with kTwo, of the next (w1, a1).
// kQuads > 0: one group of kQuads = kw quads, known at compile time, its weights held in registers.
template <class W, int kQuads, bool kTwo>
void block(const uint8_t* z, const DepthwiseQuads& s, const int8_t* w0, const int8_t* w1, int32_t* a0, int32_t* a1,
           int64_t ch) {
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

template <class W, bool kTwo>
void rows_block(const uint8_t* z, const DepthwiseQuads& s, const int8_t* w0, const int8_t* w1, int32_t* a0,
                int32_t* a1, int64_t ch) {
  if (s.groups == 1 && s.kw == 3) return block<W, 3, kTwo>(z, s, w0, w1, a0, a1, ch);
  block<W, 0, kTwo>(z, s, w0, w1, a0, a1, ch);
}

template <class W>
void rows_block(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w, int32_t* const* acc,
                int r, int64_t ch) {
  if (r + 1 < rows) return rows_block<W, true>(z, s, w[r], w[r + 1], acc[r], acc[r + 1], ch);
  rows_block<W, false>(z, s, w[r], nullptr, acc[r], nullptr, ch);
}

}  // namespace

void depthwise_quads_avx512vnni(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                                int32_t* const* acc) {
  const int64_t c16 = s.c / 16 * 16, c8 = s.c / 8 * 8;
  for (int r = 0; r < rows; r += 2) {
    for (int64_t ch = 0; ch < c16; ch += 16) rows_block<Zmm>(z, s, rows, w, acc, r, ch);
    if (c16 < c8) rows_block<Ymm>(z, s, rows, w, acc, r, c16);
  }
  if (c8 < s.c) depthwise_quads_channels(z, s, rows, w, acc, c8, s.c);
}

}  // namespace qnnpy
