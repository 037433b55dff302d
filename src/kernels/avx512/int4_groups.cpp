// AVX-512 VNNI: the grouped linear on int4 weights (kernels.h, Int4Groups). A block of 16 columns is one zmm of
// int32 lanes; each 64 bytes of the block give two vpdpbusd operands (low and high nibbles, 0..15, the unsigned
// side) against a broadcast quad of q (the signed side), up to four rows at a time sharing the unpacked weights.
// With b = w + 8: S = sum q b - zx sum b - (8 + zw) (sum q - group zx), every term exact in int32; the float
// sums multiply and add as two roundings, group by group, as the scalar twin does.
#include "kernels/avx512/avx512_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace qnnpy {
namespace {

__m512i broadcast_quad(const int8_t* q) {
  int32_t quad;
  std::memcpy(&quad, q, 4);
  return _mm512_set1_epi32(quad);
}

template <int Rows>
void block_rows(const Int4Groups& a, int64_t b, int64_t r0, __mmask16 columns) {
  const int64_t groups = a.k / a.group, pairs = a.group / 8;
  const uint8_t* w = a.w + b * 8 * a.k;
  const __m512i nibble = _mm512_set1_epi8(0x0F), ones = _mm512_set1_epi8(1);
  __m512 sum[Rows];
  for (int r = 0; r < Rows; ++r) sum[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    __m512i dot[Rows];
    for (int r = 0; r < Rows; ++r) dot[r] = _mm512_setzero_si512();
    __m512i w_sum = _mm512_setzero_si512();
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t k0 = g * a.group + 8 * p;
      const __m512i v = _mm512_loadu_si512(w + k0 * 8);
      const __m512i low = _mm512_and_si512(v, nibble), high = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
      w_sum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(w_sum, low, ones), high, ones);
      for (int r = 0; r < Rows; ++r) {
        const int8_t* q = a.q + (r0 + r) * a.k + k0;
        dot[r] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(dot[r], low, broadcast_quad(q)), high, broadcast_quad(q + 4));
      }
    }
    const int64_t at = (b * groups + g) * kInt4Block;
    const __m512i w_offset = a.zero_point
        ? _mm512_add_epi32(_mm512_loadu_si512(a.zero_point + at), _mm512_set1_epi32(8)) : _mm512_set1_epi32(8);
    const __m512 scale = _mm512_loadu_ps(a.scale + at);
    for (int r = 0; r < Rows; ++r) {
      const __m512i zx = _mm512_set1_epi32(a.zx[r0 + r]), centered = _mm512_set1_epi32(a.q_centered[(r0 + r) * groups + g]);
      const __m512i s = _mm512_sub_epi32(_mm512_sub_epi32(dot[r], _mm512_mullo_epi32(zx, w_sum)),
                                         _mm512_mullo_epi32(w_offset, centered));
      sum[r] = _mm512_add_ps(sum[r], _mm512_mul_ps(scale, _mm512_cvtepi32_ps(s)));
    }
  }
  for (int r = 0; r < Rows; ++r) _mm512_mask_storeu_ps(a.sums + (r0 + r) * a.ld_sums + b * kInt4Block, columns, sum[r]);
}

}  // namespace

void int4_group_sums_avx512vnni(const Int4Groups& a) {
  const int64_t blocks = (a.n + kInt4Block - 1) / kInt4Block;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t width = std::min(kInt4Block, a.n - b * kInt4Block);
    const auto columns = static_cast<__mmask16>((1u << width) - 1);
    int64_t r = 0;
    for (; r + 4 <= a.m; r += 4) block_rows<4>(a, b, r, columns);
    if (a.m - r == 3) block_rows<3>(a, b, r, columns);
    if (a.m - r == 2) block_rows<2>(a, b, r, columns);
    if (a.m - r == 1) block_rows<1>(a, b, r, columns);
  }
}

}  // namespace qnnpy
