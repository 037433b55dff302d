// AVX2 table lookup and quantized multiply.
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

// 32 bytes at a time: vpshufb looks up 16-entry rows; the row of each byte is
// chosen by comparing its high nibble.
void lookup_avx2(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* out) {
  __m256i rows[16];
  for (int r = 0; r < 16; ++r) {
    rows[r] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * r)));
  }
  const __m256i low_nibble = _mm256_set1_epi8(0x0F);
  const int64_t vec_n = n / 32 * 32;
  for (int64_t i = 0; i < vec_n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i lo = _mm256_and_si256(v, low_nibble);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_nibble);
    __m256i y = _mm256_setzero_si256();
    for (int r = 0; r < 16; ++r) {
      const __m256i in_row = _mm256_cmpeq_epi8(hi, _mm256_set1_epi8(static_cast<char>(r)));
      y = _mm256_blendv_epi8(y, _mm256_shuffle_epi8(rows[r], lo), in_row);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), y);
  }
  lookup_scalar(x + vec_n, n - vec_n, table, out + vec_n);
}

void mul_avx2(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const MulParams& p, uint8_t* out) {
  const __m256i za = _mm256_set1_epi32(p.a_zp), zb = _mm256_set1_epi32(p.b_zp), zo = _mm256_set1_epi32(p.out_zp);
  const __m256i lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  const __m256 mult = _mm256_set1_ps(p.mult);
  const int64_t vec_n = n / 8 * 8;
  for (int64_t i = 0; i < vec_n; i += 8) {
    const __m256i prod = _mm256_mullo_epi32(_mm256_sub_epi32(load8_q(a + i, is_signed), za),
                                            _mm256_sub_epi32(load8_q(b + i, is_signed), zb));
    const __m256i y = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(prod), mult));
    store8_q(out + i, clamp_epi32(_mm256_add_epi32(y, zo), lo, hi));
  }
  mul_scalar(a + vec_n, b + vec_n, n - vec_n, is_signed, p, out + vec_n);
}

}  // namespace qnnpy
