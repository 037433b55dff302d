// AVX2: the grouped linear on int4 weights (kernels.h, Int4Groups). A block of 16 columns is two ymm halves of 8
// int32 lanes; vpmaddubsw multiplies the unpacked weights (0..15, the unsigned side) by a broadcast quad of q (the
// signed side) into int16 pair sums (at most 2 * 15 * 128: no saturation), vpmaddwd adds the pairs into int32.
// With b = w + 8: S = sum q b - zx sum b - (8 + zw) (sum q - group zx), exact; the float sums multiply and add as
// two roundings, group by group, as the scalar twin does.
#include "kernels/avx2/avx2_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace qnnpy {
namespace {

__m256i broadcast_quad(const int8_t* q) {
  int32_t quad;
  std::memcpy(&quad, q, 4);
  return _mm256_set1_epi32(quad);
}

// sum over the quad of low * q_low + high * q_high, four products each, as int32 lanes.
__m256i quad_dots(__m256i low, __m256i q_low, __m256i high, __m256i q_high) {
  const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(low, q_low), _mm256_maddubs_epi16(high, q_high));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

template <int Rows>
void half_rows(const Int4Groups& a, int64_t b, int64_t half, int64_t r0, int64_t width) {
  const int64_t groups = a.k / a.group, pairs = a.group / 8;
  const uint8_t* w = a.w + b * 8 * a.k + 32 * half;
  const __m256i nibble = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi8(1);
  __m256 sum[Rows];
  for (int r = 0; r < Rows; ++r) sum[r] = _mm256_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    __m256i dot[Rows];
    for (int r = 0; r < Rows; ++r) dot[r] = _mm256_setzero_si256();
    __m256i w_sum = _mm256_setzero_si256();
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t k0 = g * a.group + 8 * p;
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k0 * 8));
      const __m256i low = _mm256_and_si256(v, nibble), high = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
      w_sum = _mm256_add_epi32(w_sum, quad_dots(low, ones, high, ones));
      for (int r = 0; r < Rows; ++r) {
        const int8_t* q = a.q + (r0 + r) * a.k + k0;
        dot[r] = _mm256_add_epi32(dot[r], quad_dots(low, broadcast_quad(q), high, broadcast_quad(q + 4)));
      }
    }
    const int64_t at = (b * groups + g) * kInt4Block + 8 * half;
    const __m256i w_offset = a.zero_point
        ? _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.zero_point + at)), _mm256_set1_epi32(8))
        : _mm256_set1_epi32(8);
    const __m256 scale = _mm256_loadu_ps(a.scale + at);
    for (int r = 0; r < Rows; ++r) {
      const __m256i zx = _mm256_set1_epi32(a.zx[r0 + r]), centered = _mm256_set1_epi32(a.q_centered[(r0 + r) * groups + g]);
      const __m256i s = _mm256_sub_epi32(_mm256_sub_epi32(dot[r], _mm256_mullo_epi32(zx, w_sum)),
                                         _mm256_mullo_epi32(w_offset, centered));
      sum[r] = _mm256_add_ps(sum[r], _mm256_mul_ps(scale, _mm256_cvtepi32_ps(s)));
    }
  }
  for (int r = 0; r < Rows; ++r) {
    float* out = a.sums + (r0 + r) * a.ld_sums + b * kInt4Block + 8 * half;
    if (width == 8) {
      _mm256_storeu_ps(out, sum[r]);
    } else {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, sum[r]);
      std::copy_n(lanes, width, out);
    }
  }
}

}  // namespace

void int4_group_sums_avx2(const Int4Groups& a) {
  const int64_t blocks = (a.n + kInt4Block - 1) / kInt4Block;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t half = 0; half < 2; ++half) {
      const int64_t width = std::min<int64_t>(8, a.n - b * kInt4Block - 8 * half);
      if (width <= 0) break;
      int64_t r = 0;
      for (; r + 4 <= a.m; r += 4) half_rows<4>(a, b, half, r, width);
      if (a.m - r == 3) half_rows<3>(a, b, half, r, width);
      if (a.m - r == 2) half_rows<2>(a, b, half, r, width);
      if (a.m - r == 1) half_rows<1>(a, b, half, r, width);
    }
}

}  // namespace qnnpy
