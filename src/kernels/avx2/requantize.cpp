// AVX2 requantization of int32 accumulators (formulas in kernels.h). 32 (or 16) outputs at a
// time are narrowed with saturating packs as PyTorch's kernels do: packs_epi32 is the
// int16 saturation of the formula, and since lo and hi lie within int16, adding zp
// with int16 saturation and clamping to [lo, hi] gives what int32 arithmetic gives.
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

inline __m256i load8(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// cvtps(fl(fl(float(acc + ibias) + fbias) * mult)) for 8 outputs of columns [j, j + 8). Columns holds
// those columns' parameters, loaded once for all the rows.
struct FloatScale {
  struct Columns {
    __m256i ibias;
    __m256 fbias, mult;
  };
  static Columns columns(const RequantParams& p, int64_t j) {
    return {load8(p.ibias + j), _mm256_loadu_ps(p.fbias + j), _mm256_loadu_ps(p.mult + j)};
  }
  static __m256i apply(const int32_t* row, int64_t j, const Columns& c) {
    const __m256i v = _mm256_add_epi32(load8(row + j), c.ibias);
    return _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(v), c.fbias), c.mult));
  }
};

// oneDNN's order for 8 outputs of columns [j, j + 8): cvtps(clamp(fl(fl(t * mult) + zp), lo, hi)) - zp with
// t = fl(fl(fl(float(acc + ibias) * src_scale) * w_scale) + fbias), the zero point taken off again (exactly, in
// int32) because requantize_rows adds it.
struct OnednnScale {
  struct Columns {
    __m256i ibias, zp;
    __m256 src_scale, w_scale, fbias, mult, zp_f, lo_f, hi_f;
  };
  static Columns columns(const RequantParams& p, int64_t j) {
    return {load8(p.ibias + j),
            _mm256_set1_epi32(p.zp),
            _mm256_set1_ps(p.src_scale),
            _mm256_loadu_ps(p.w_scale + j),
            _mm256_loadu_ps(p.fbias + j),
            _mm256_loadu_ps(p.mult + j),
            _mm256_set1_ps(static_cast<float>(p.zp)),
            _mm256_set1_ps(static_cast<float>(p.lo)),
            _mm256_set1_ps(static_cast<float>(p.hi))};
  }
  static __m256i apply(const int32_t* row, int64_t j, const Columns& c) {
    const __m256i v = _mm256_add_epi32(load8(row + j), c.ibias);
    __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), c.src_scale), c.w_scale);
    t = _mm256_add_ps(_mm256_mul_ps(_mm256_add_ps(t, c.fbias), c.mult), c.zp_f);
    t = _mm256_min_ps(_mm256_max_ps(t, c.lo_f), c.hi_f);
    return _mm256_sub_epi32(_mm256_cvtps_epi32(t), c.zp);
  }
};

// MultiplyByQuantizedMultiplier(acc + ibias, M0, shift) (kernels/fixed_point.h) for 8 outputs of
// columns [j, j + 8). The high multiply: v = a * M0 + 2^30 exactly in int64 (mul_epi32 on the even
// lanes, and on the odd lanes shifted down), and bits 31..62 of v are floor(v / 2^31) modulo
// 2^32. That quotient fits in int32 except for a = M0 = INT32_MIN, where it is 2^31 and wraps
// to INT32_MIN; no other operands give INT32_MIN (a * M0 >= -2^62 + 2^31), so adding the mask
// of INT32_MIN lanes gives gemmlowp's saturation to INT32_MAX. Columns holds what depends on the
// column only: M0, the left shift, the right shift and its rounding mask.
struct FixedPointScale {
  struct Columns {
    __m256i ibias, mult, left, right, mask;
  };
  static Columns columns(const RequantParams& p, int64_t j) {
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1), shift = load8(p.fixed_shift + j);
    const __m256i right = _mm256_max_epi32(_mm256_sub_epi32(zero, shift), zero);
    return {load8(p.ibias + j), load8(p.fixed_multiplier + j), _mm256_max_epi32(shift, zero), right,
            _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one)};
  }
  static __m256i apply(const int32_t* row, int64_t j, const Columns& c) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i x = _mm256_add_epi32(load8(row + j), c.ibias);
    const __m256i a = _mm256_sllv_epi32(x, c.left);  // wraps as int32
    const __m256i nudge = _mm256_set1_epi64x(int64_t{1} << 30);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(a, c.mult), nudge);
    const __m256i odd =
        _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(c.mult, 32)), nudge);
    __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    high = _mm256_add_epi32(high, _mm256_cmpeq_epi32(high, _mm256_set1_epi32(INT32_MIN)));
    // RoundingDivideByPOT(high, right): (high >> right) + (remainder > threshold).
    const __m256i remainder = _mm256_and_si256(high, c.mask);
    const __m256i threshold = _mm256_sub_epi32(_mm256_srli_epi32(c.mask, 1), _mm256_cmpgt_epi32(zero, high));
    return _mm256_sub_epi32(_mm256_srav_epi32(high, c.right), _mm256_cmpgt_epi32(remainder, threshold));
  }
};

// Column blocks outer and rows inner, so that each block's parameters are loaded once. kClamp:
// [lo, hi] is narrower than the output type, whose saturating pack otherwise is the clamp.
template <typename Scale, bool kClamp>
void requantize_rows(const int32_t* acc, int64_t m, int64_t n, int64_t ld_acc, const RequantParams& p, uint8_t* out,
                     int64_t ld_out) {
  const __m256i zp = _mm256_set1_epi32(p.zp), lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  const __m256i i16_min = _mm256_set1_epi32(INT16_MIN), i16_max = _mm256_set1_epi32(INT16_MAX);
  const __m256i zp16 = _mm256_set1_epi16(static_cast<int16_t>(p.zp));
  const __m256i lo16 = _mm256_set1_epi16(static_cast<int16_t>(p.lo)), hi16 = _mm256_set1_epi16(static_cast<int16_t>(p.hi));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const bool signed_out = p.lo < 0;
  const int64_t n32 = n / 32 * 32, n8 = n / 8 * 8;
  for (int64_t j = 0; j < n32; j += 32) {
    const typename Scale::Columns c0 = Scale::columns(p, j), c1 = Scale::columns(p, j + 8);
    const typename Scale::Columns c2 = Scale::columns(p, j + 16), c3 = Scale::columns(p, j + 24);
    const int32_t* row = acc;
    uint8_t* dst = out + j;
    for (int64_t i = 0; i < m; ++i, row += ld_acc, dst += ld_out) {
      // packs work within 128-bit lanes: the bytes come out as dwords a0 b0 c0 d0 a1 b1 c1 d1.
      __m256i ab = _mm256_packs_epi32(Scale::apply(row, j, c0), Scale::apply(row, j + 8, c1));
      __m256i cd = _mm256_packs_epi32(Scale::apply(row, j + 16, c2), Scale::apply(row, j + 24, c3));
      ab = _mm256_adds_epi16(ab, zp16);
      cd = _mm256_adds_epi16(cd, zp16);
      if (kClamp) {
        ab = _mm256_min_epi16(_mm256_max_epi16(ab, lo16), hi16);
        cd = _mm256_min_epi16(_mm256_max_epi16(cd, lo16), hi16);
      }
      const __m256i bytes = signed_out ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permutevar8x32_epi32(bytes, order));
    }
  }
  int64_t j8 = n32;
  if (n - n32 >= 16) {  // one block of 16: the low 128 bits of the packed bytes
    const typename Scale::Columns c0 = Scale::columns(p, n32), c1 = Scale::columns(p, n32 + 8);
    for (int64_t i = 0; i < m; ++i) {
      const int32_t* row = acc + i * ld_acc;
      __m256i ab = _mm256_packs_epi32(Scale::apply(row, n32, c0), Scale::apply(row, n32 + 8, c1));
      ab = _mm256_adds_epi16(ab, zp16);
      if (kClamp) ab = _mm256_min_epi16(_mm256_max_epi16(ab, lo16), hi16);
      const __m256i bytes = signed_out ? _mm256_packs_epi16(ab, ab) : _mm256_packus_epi16(ab, ab);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i * ld_out + n32),
                       _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(bytes, order)));
    }
    j8 = n32 + 16;
  }
  for (int64_t j = j8; j < n8; j += 8) {
    const typename Scale::Columns c = Scale::columns(p, j);
    for (int64_t i = 0; i < m; ++i) {
      const __m256i y = clamp_epi32(Scale::apply(acc + i * ld_acc, j, c), i16_min, i16_max);
      store8_q(out + i * ld_out + j, clamp_epi32(_mm256_add_epi32(y, zp), lo, hi));
    }
  }
  if (n8 < n) requantize_scalar(acc + n8, m, n - n8, ld_acc, p.columns_from(n8), out + n8, ld_out);
}

}  // namespace

void requantize_avx2(const int32_t* acc, int64_t m, int64_t n, int64_t ld_acc, const RequantParams& p, uint8_t* out,
                     int64_t ld_out) {
  const bool full_range = p.lo < 0 ? (p.lo == INT8_MIN && p.hi == INT8_MAX) : (p.lo == 0 && p.hi == UINT8_MAX);
  if (p.fixed_multiplier) {
    if (full_range) return requantize_rows<FixedPointScale, false>(acc, m, n, ld_acc, p, out, ld_out);
    return requantize_rows<FixedPointScale, true>(acc, m, n, ld_acc, p, out, ld_out);
  }
  if (p.w_scale) return requantize_rows<OnednnScale, false>(acc, m, n, ld_acc, p, out, ld_out);  // clamped in float
  if (full_range) return requantize_rows<FloatScale, false>(acc, m, n, ld_acc, p, out, ld_out);
  requantize_rows<FloatScale, true>(acc, m, n, ld_acc, p, out, ld_out);
}

}  // namespace qnnpy
