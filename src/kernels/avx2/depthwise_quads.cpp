// AVX2 depthwise conv over quads of interleaved input rows (kernels.h, DepthwiseQuads), 8
// channels per ymm: each 32-bit lane holds one channel's four row bytes; vpmaddubsw multiplies
// them with the quad's int8 weights into two int16 pair sums (exact under the caller's clamp)
// and vpmaddwd with ones adds the two into int32. Two output rows share each load of z, and a
// channel block's weights stay in registers along the row. Also interleave4, which the
// avx512vnni set uses as well.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

inline __m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline __m256i dot4(__m256i x, __m256i w, __m256i ones) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), ones);
}

// Channels [ch, ch + 8) of one output row (w0, a0) and, with kTwo, of the next (w1, a1).
// kQuads > 0: one group of kQuads = kw quads, known at compile time, its weights held in registers.
template <int kQuads, bool kTwo>
void block8(const uint8_t* z, const DepthwiseQuads& s, const int8_t* w0, const int8_t* w1, int32_t* a0, int32_t* a1,
            int64_t ch) {
  // The geometry in locals: the vector stores may alias anything, s included.
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t c = s.c, ow = s.ow, kw = s.kw, groups = s.groups, pixel = s.sw * c * 4, tap = s.dw * c * 4;
  a0 += ch;
  if (kTwo) a1 += ch;
  if constexpr (kQuads > 0) {
    __m256i v0[kQuads], v1[kQuads];
    for (int i = 0; i < kQuads; ++i) {
      v0[i] = load(w0 + (i * c + ch) * 4);
      if (kTwo) v1[i] = load(w1 + (i * c + ch) * 4);
    }
    const uint8_t* p = z + ch * 4;
    for (int64_t ox = 0; ox < ow; ++ox, p += pixel, a0 += c, a1 += kTwo ? c : 0) {
      __m256i s0 = _mm256_setzero_si256(), s1 = s0;
      for (int i = 0; i < kQuads; ++i) {
        const __m256i x = load(p + i * tap);
        s0 = _mm256_add_epi32(s0, dot4(x, v0[i], ones));
        if (kTwo) s1 = _mm256_add_epi32(s1, dot4(x, v1[i], ones));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a0), s0);
      if (kTwo) _mm256_storeu_si256(reinterpret_cast<__m256i*>(a1), s1);
    }
  } else {
    for (int64_t ox = 0; ox < ow; ++ox, a0 += c, a1 += kTwo ? c : 0) {
      __m256i s0 = _mm256_setzero_si256(), s1 = s0;
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t kx = 0; kx < kw; ++kx) {
          const __m256i x = load(z + g * s.group_stride + ox * pixel + kx * tap + ch * 4);
          const int64_t at = ((g * kw + kx) * c + ch) * 4;
          s0 = _mm256_add_epi32(s0, dot4(x, load(w0 + at), ones));
          if (kTwo) s1 = _mm256_add_epi32(s1, dot4(x, load(w1 + at), ones));
        }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a0), s0);
      if (kTwo) _mm256_storeu_si256(reinterpret_cast<__m256i*>(a1), s1);
    }
  }
}

template <bool kTwo>
void rows_block8(const uint8_t* z, const DepthwiseQuads& s, const int8_t* w0, const int8_t* w1, int32_t* a0,
                 int32_t* a1, int64_t ch) {
  if (s.groups == 1 && s.kw == 3) return block8<3, kTwo>(z, s, w0, w1, a0, a1, ch);
  block8<0, kTwo>(z, s, w0, w1, a0, a1, ch);
}

// kClamp: the bound is below 255 (otherwise no byte exceeds it and nothing is compared).
template <bool kClamp>
int64_t interleave4_blocks(const uint8_t* const* rows, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags) {
  static_assert(kClampBlock == 32, "one AVX2 vector per block");
  // In-lane unpacks interleave the low and the high 8 bytes of each 128-bit lane. Taking the
  // dwords in the order 0 2 4 6 | 1 3 5 7 first makes the two unpack rounds (bytes, then byte
  // pairs) come out in channel order: channels 0-7, 8-15, 16-23, 24-31 as four quads each.
  const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256i vb = _mm256_set1_epi8(static_cast<char>(bound));
  const int64_t blocks = (n + kClampBlock - 1) / kClampBlock;
  int64_t flagged = 0, b = 0;
  for (; (b + 1) * kClampBlock <= n; ++b) {
    const int64_t i = b * kClampBlock;
    __m256i v[4];
    for (int j = 0; j < 4; ++j) {
      bool over = false;
      if (rows[j] == nullptr) {
        v[j] = _mm256_setzero_si256();
      } else if (kClamp) {
        const __m256i x = load(rows[j] + i);
        v[j] = _mm256_permutevar8x32_epi32(_mm256_min_epu8(x, vb), order);
        over = _mm256_movemask_epi8(_mm256_cmpeq_epi8(x, _mm256_min_epu8(x, vb))) != -1;
      } else {
        v[j] = _mm256_permutevar8x32_epi32(load(rows[j] + i), order);
      }
      flags[j * blocks + b] = over;
      flagged += over;
    }
    const __m256i ab_lo = _mm256_unpacklo_epi8(v[0], v[1]), ab_hi = _mm256_unpackhi_epi8(v[0], v[1]);
    const __m256i cd_lo = _mm256_unpacklo_epi8(v[2], v[3]), cd_hi = _mm256_unpackhi_epi8(v[2], v[3]);
    __m256i* o = reinterpret_cast<__m256i*>(out + 4 * i);
    _mm256_storeu_si256(o, _mm256_unpacklo_epi16(ab_lo, cd_lo));
    _mm256_storeu_si256(o + 1, _mm256_unpackhi_epi16(ab_lo, cd_lo));
    _mm256_storeu_si256(o + 2, _mm256_unpacklo_epi16(ab_hi, cd_hi));
    _mm256_storeu_si256(o + 3, _mm256_unpackhi_epi16(ab_hi, cd_hi));
  }
  if (b < blocks) {  // the last, partial block
    const int64_t i = b * kClampBlock;
    const uint8_t* rest[4];
    for (int j = 0; j < 4; ++j) rest[j] = rows[j] ? rows[j] + i : nullptr;
    uint8_t last[4];
    flagged += interleave4_scalar(rest, n - i, bound, out + 4 * i, last);
    for (int j = 0; j < 4; ++j) flags[j * blocks + b] = last[j];
  }
  return flagged;
}

}  // namespace

void depthwise_quads_avx2(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                          int32_t* const* acc) {
  const int64_t c8 = s.c / 8 * 8;
  for (int r = 0; r < rows; r += 2)
    for (int64_t ch = 0; ch < c8; ch += 8) {
      if (r + 1 < rows) {
        rows_block8<true>(z, s, w[r], w[r + 1], acc[r], acc[r + 1], ch);
      } else {
        rows_block8<false>(z, s, w[r], nullptr, acc[r], nullptr, ch);
      }
    }
  if (c8 < s.c) depthwise_quads_channels(z, s, rows, w, acc, c8, s.c);
}

int64_t interleave4_avx2(const uint8_t* const* rows, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags) {
  if (bound == 255) return interleave4_blocks<false>(rows, n, bound, out, flags);
  return interleave4_blocks<true>(rows, n, bound, out, flags);
}

}  // namespace qnnpy
