// AVX2 element-wise kernels: quantize, dequantize, add (float and fixed point), relu.
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/rounding.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void quantize_avx2(const float* x, int64_t n, float inv_scale, int32_t zp, int32_t lo, int32_t hi, uint8_t* out) {
  const __m256 inv = _mm256_set1_ps(inv_scale), bound = _mm256_set1_ps(kQuantizeUpperBound);
  const __m256i vzp = _mm256_set1_epi32(zp), vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
  const int64_t vec_n = n / 8 * 8;
  for (int64_t i = 0; i < vec_n; i += 8) {
    const __m256 t = _mm256_min_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv), bound);
    store8_q(out + i, clamp_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(t), vzp), vlo, vhi));
  }
  quantize_scalar(x + vec_n, n - vec_n, inv_scale, zp, lo, hi, out + vec_n);
}

void dequantize_avx2(const uint8_t* q, int64_t n, bool is_signed, float scale, int32_t zp, float* out) {
  const __m256 vs = _mm256_set1_ps(scale);
  const __m256i vzp = _mm256_set1_epi32(zp);
  const int64_t vec_n = n / 8 * 8;
  for (int64_t i = 0; i < vec_n; i += 8) {
    const __m256i v = _mm256_sub_epi32(load8_q(q + i, is_signed), vzp);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(vs, _mm256_cvtepi32_ps(v)));
  }
  dequantize_scalar(q + vec_n, n - vec_n, is_signed, scale, zp, out + vec_n);
}

void add_float_avx2(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFloatParams& p,
                    uint8_t* out) {
  // PyTorch's vector lanes: fma(s, q, fl(s * -zp)); its scalar remainder is handled by the scalar twin.
  const __m256 sa = _mm256_set1_ps(p.a_scale), sb = _mm256_set1_ps(p.b_scale);
  const __m256 pa = _mm256_set1_ps(p.a_scale * -static_cast<float>(p.a_zp));
  const __m256 pb = _mm256_set1_ps(p.b_scale * -static_cast<float>(p.b_zp));
  const __m256 inv = _mm256_set1_ps(p.inv_out_scale), bound = _mm256_set1_ps(kQuantizeUpperBound);
  const __m256 zero = _mm256_setzero_ps();
  const __m256i vzp = _mm256_set1_epi32(p.out_zp), vlo = _mm256_set1_epi32(p.lo), vhi = _mm256_set1_epi32(p.hi);
  const int64_t vector_end = n - n % kTorchVectorBlock;
  for (int64_t i = 0; i < vector_end; i += 8) {
    const __m256 da = _mm256_fmadd_ps(sa, _mm256_cvtepi32_ps(load8_q(a + i, is_signed)), pa);
    const __m256 db = _mm256_fmadd_ps(sb, _mm256_cvtepi32_ps(load8_q(b + i, is_signed)), pb);
    __m256 c = _mm256_add_ps(da, db);
    if (p.relu) c = _mm256_max_ps(c, zero);
    const __m256 t = _mm256_min_ps(_mm256_mul_ps(c, inv), bound);
    store8_q(out + i, clamp_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(t), vzp), vlo, vhi));
  }
  for (int64_t i = vector_end; i < n; ++i) {
    const int32_t qa = is_signed ? int8_t(a[i]) : a[i], qb = is_signed ? int8_t(b[i]) : b[i];
    out[i] = static_cast<uint8_t>(add_float_one(qa, qb, p, false));
  }
}

void add_fixed_avx2(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFixedParams& p,
                    uint8_t* out) {
  const __m256i am = _mm256_set1_epi32(p.a_mult), bm = _mm256_set1_epi32(p.b_mult), zpt = _mm256_set1_epi32(p.zp_term);
  const __m256i mask = _mm256_set1_epi32(static_cast<int32_t>((uint32_t{1} << p.shift) - 1));
  const __m256i threshold = _mm256_srli_epi32(mask, 1);
  const __m128i shift = _mm_cvtsi32_si128(p.shift);
  const __m256i vzp = _mm256_set1_epi32(p.out_zp), vlo = _mm256_set1_epi32(p.lo), vhi = _mm256_set1_epi32(p.hi);
  const int64_t vec_n = n / 8 * 8;
  for (int64_t i = 0; i < vec_n; i += 8) {
    __m256i acc = _mm256_add_epi32(zpt, _mm256_mullo_epi32(load8_q(a + i, is_signed), am));
    acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(load8_q(b + i, is_signed), bm));
    // remainder = (acc & mask) - (acc < 0); y = (acc >> shift) + (remainder > threshold)
    const __m256i rem = _mm256_add_epi32(_mm256_and_si256(acc, mask), _mm256_srai_epi32(acc, 31));
    const __m256i y = _mm256_sub_epi32(_mm256_sra_epi32(acc, shift), _mm256_cmpgt_epi32(rem, threshold));
    store8_q(out + i, clamp_epi32(_mm256_add_epi32(y, vzp), vlo, vhi));
  }
  add_fixed_scalar(a + vec_n, b + vec_n, n - vec_n, is_signed, p, out + vec_n);
}

void relu_avx2(const uint8_t* x, int64_t n, bool is_signed, int32_t zp, uint8_t* out) {
  const __m256i vzp = _mm256_set1_epi8(static_cast<char>(zp));
  const int64_t vec_n = n / 32 * 32;
  for (int64_t i = 0; i < vec_n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i r = is_signed ? _mm256_max_epi8(v, vzp) : _mm256_max_epu8(v, vzp);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), r);
  }
  relu_scalar(x + vec_n, n - vec_n, is_signed, zp, out + vec_n);
}

}  // namespace qnnpy
