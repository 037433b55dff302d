// AVX-512 element-wise add (float and fixed point), the zmm form of avx2/elementwise.cpp:
// 16 elements per step, results clamped to the 8-bit range and narrowed by vpmovdb.
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as the unused merge operand,
// which it then reports as uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/rounding.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

inline __m512i load16_q(const uint8_t* p, bool is_signed) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return is_signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}

inline __m512i clamp(__m512i v, __m512i lo, __m512i hi) { return _mm512_min_epi32(_mm512_max_epi32(v, lo), hi); }

}  // namespace

void add_float_avx512(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFloatParams& p,
                      uint8_t* out) {
  // PyTorch's vector lanes: fma(s, q, fl(s * -zp)) over whole blocks of kTorchVectorBlock
  // elements; its scalar remainder is the scalar twin's (add_float_one without fma).
  const __m512 sa = _mm512_set1_ps(p.a_scale), sb = _mm512_set1_ps(p.b_scale);
  const __m512 pa = _mm512_set1_ps(p.a_scale * -static_cast<float>(p.a_zp));
  const __m512 pb = _mm512_set1_ps(p.b_scale * -static_cast<float>(p.b_zp));
  const __m512 inv = _mm512_set1_ps(p.inv_out_scale), bound = _mm512_set1_ps(kQuantizeUpperBound);
  const __m512 zero = _mm512_setzero_ps();
  const __m512i vzp = _mm512_set1_epi32(p.out_zp), vlo = _mm512_set1_epi32(p.lo), vhi = _mm512_set1_epi32(p.hi);
  const int64_t vector_end = n - n % kTorchVectorBlock;
  for (int64_t i = 0; i < vector_end; i += 16) {
    const __m512 da = _mm512_fmadd_ps(sa, _mm512_cvtepi32_ps(load16_q(a + i, is_signed)), pa);
    const __m512 db = _mm512_fmadd_ps(sb, _mm512_cvtepi32_ps(load16_q(b + i, is_signed)), pb);
    __m512 c = _mm512_add_ps(da, db);
    if (p.relu) c = _mm512_max_ps(c, zero);
    const __m512 t = _mm512_min_ps(_mm512_mul_ps(c, inv), bound);
    const __m512i y = clamp(_mm512_add_epi32(_mm512_cvtps_epi32(t), vzp), vlo, vhi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(y));
  }
  for (int64_t i = vector_end; i < n; ++i) {
    const int32_t qa = is_signed ? int8_t(a[i]) : a[i], qb = is_signed ? int8_t(b[i]) : b[i];
    out[i] = static_cast<uint8_t>(add_float_one(qa, qb, p, false));
  }
}

void add_fixed_avx512(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFixedParams& p,
                      uint8_t* out) {
  // QNNPACK's q8vadd (scalar/elementwise.cpp add_fixed_one) in wrapping int32 lanes.
  const __m512i am = _mm512_set1_epi32(p.a_mult), bm = _mm512_set1_epi32(p.b_mult), zpt = _mm512_set1_epi32(p.zp_term);
  const __m512i mask = _mm512_set1_epi32(static_cast<int32_t>((uint32_t{1} << p.shift) - 1));
  const __m512i threshold = _mm512_srli_epi32(mask, 1), one = _mm512_set1_epi32(1);
  const __m128i shift = _mm_cvtsi32_si128(p.shift);
  const __m512i vzp = _mm512_set1_epi32(p.out_zp), vlo = _mm512_set1_epi32(p.lo), vhi = _mm512_set1_epi32(p.hi);
  const int64_t vec_n = n / 16 * 16;
  for (int64_t i = 0; i < vec_n; i += 16) {
    __m512i acc = _mm512_add_epi32(zpt, _mm512_mullo_epi32(load16_q(a + i, is_signed), am));
    acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(load16_q(b + i, is_signed), bm));
    // remainder = (acc & mask) - (acc < 0); y = (acc >> shift) + (remainder > threshold)
    const __m512i rem = _mm512_add_epi32(_mm512_and_si512(acc, mask), _mm512_srai_epi32(acc, 31));
    const __m512i shifted = _mm512_sra_epi32(acc, shift);
    const __m512i y = _mm512_mask_add_epi32(shifted, _mm512_cmpgt_epi32_mask(rem, threshold), shifted, one);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(clamp(_mm512_add_epi32(y, vzp), vlo, vhi)));
  }
  add_fixed_scalar(a + vec_n, b + vec_n, n - vec_n, is_signed, p, out + vec_n);
}

}  // namespace qnnpy
