// AVX-512 VNNI: the grouped linear on int4 weights (kernels.h, Int4Groups). A block of 16 columns is one zmm of
// int32 lanes; each 64 bytes of the block give two vpdpbusd operands (low and high nibbles, 0..15, the unsigned
// side) against a broadcast quad of q (the signed side), up to four rows at a time sharing the unpacked weights,
// and with fewer than four rows four blocks at a time.
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

// Rows rows against Blocks consecutive blocks of 16 columns from block b: Blocks independent accumulator chains
// per row keep vpdpbusd's latency hidden when there are few rows (one row: the decode of a token).
template <int Rows, int Blocks>
void blocks_rows(const Int4Groups& a, int64_t b, int64_t r0, const __mmask16 (&columns)[Blocks]) {
  const int64_t groups = a.k / a.group, pairs = a.group / 8;
  const __m512i nibble = _mm512_set1_epi8(0x0F), ones = _mm512_set1_epi8(1);
  __m512 sum[Rows][Blocks];
  for (int r = 0; r < Rows; ++r)
    for (int j = 0; j < Blocks; ++j) sum[r][j] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    __m512i dot[Rows][Blocks], w_sum[Blocks];
    for (int j = 0; j < Blocks; ++j) {
      w_sum[j] = _mm512_setzero_si512();
      for (int r = 0; r < Rows; ++r) dot[r][j] = _mm512_setzero_si512();
    }
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t k0 = g * a.group + 8 * p;
      __m512i q_low[Rows], q_high[Rows];
      for (int r = 0; r < Rows; ++r) {
        q_low[r] = broadcast_quad(a.q + (r0 + r) * a.k + k0);
        q_high[r] = broadcast_quad(a.q + (r0 + r) * a.k + k0 + 4);
      }
      for (int j = 0; j < Blocks; ++j) {
        const __m512i v = _mm512_loadu_si512(a.w + (b + j) * 8 * a.k + k0 * 8);
        const __m512i low = _mm512_and_si512(v, nibble), high = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
        w_sum[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(w_sum[j], low, ones), high, ones);
        for (int r = 0; r < Rows; ++r) {
          dot[r][j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(dot[r][j], low, q_low[r]), high, q_high[r]);
        }
      }
    }
    for (int j = 0; j < Blocks; ++j) {
      const int64_t at = ((b + j) * groups + g) * kInt4Block;
      const __m512i w_offset = a.zero_point
          ? _mm512_add_epi32(_mm512_loadu_si512(a.zero_point + at), _mm512_set1_epi32(8)) : _mm512_set1_epi32(8);
      const __m512 scale = _mm512_loadu_ps(a.scale + at);
      for (int r = 0; r < Rows; ++r) {
        const __m512i zx = _mm512_set1_epi32(a.zx[r0 + r]);
        const __m512i centered = _mm512_set1_epi32(a.q_centered[(r0 + r) * groups + g]);
        const __m512i s = _mm512_sub_epi32(_mm512_sub_epi32(dot[r][j], _mm512_mullo_epi32(zx, w_sum[j])),
                                           _mm512_mullo_epi32(w_offset, centered));
        sum[r][j] = _mm512_add_ps(sum[r][j], _mm512_mul_ps(scale, _mm512_cvtepi32_ps(s)));
      }
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int j = 0; j < Blocks; ++j) {
      _mm512_mask_storeu_ps(a.sums + (r0 + r) * a.ld_sums + (b + j) * kInt4Block, columns[j], sum[r][j]);
    }
}

// All rows against Blocks blocks from b: four rows at a time, then the rest.
template <int Blocks>
void blocks(const Int4Groups& a, int64_t b) {
  __mmask16 columns[Blocks];
  for (int j = 0; j < Blocks; ++j) {
    const int64_t width = std::min(kInt4Block, a.n - (b + j) * kInt4Block);
    columns[j] = static_cast<__mmask16>((1u << width) - 1);
  }
  int64_t r = 0;
  for (; r + 4 <= a.m; r += 4) blocks_rows<4, Blocks>(a, b, r, columns);
  if (a.m - r == 3) blocks_rows<3, Blocks>(a, b, r, columns);
  if (a.m - r == 2) blocks_rows<2, Blocks>(a, b, r, columns);
  if (a.m - r == 1) blocks_rows<1, Blocks>(a, b, r, columns);
}

}  // namespace

void int4_group_sums_avx512vnni(const Int4Groups& a) {
  const int64_t count = (a.n + kInt4Block - 1) / kInt4Block;
  int64_t b = 0;
  if (a.m < 4) {  // few rows: four blocks at a time for independent chains
    for (; b + 4 <= count; b += 4) blocks<4>(a, b);
  }
  for (; b < count; ++b) blocks<1>(a, b);
}

}  // namespace qnnpy
