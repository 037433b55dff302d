// NEON requantization of int32 accumulators (formulas in kernels.h), 8 columns a step;
// the last n % 8 columns go to the scalar kernel.
//   float rule: scvtf, fadd, fmul, then fcvtns (round half to even, as cvtps does) with
//     NaN and values outside int32 replaced by INT32_MIN (x86's "integer indefinite"),
//     then the int16 saturation of packs_epi32, + zp, clamp.
//   oneDNN's rule: scvtf, fmul, fmul, fadd, fmul, fadd zp, clamp, fcvtns.
//   fixed point: x << max(shift, 0) (sshl wraps as the scalar int32 shift does), sqrdmulh
//     (exactly gemmlowp's SaturatingRoundingDoublingHighMul: floor((x M0 + 2^30) / 2^31),
//     saturating only INT32_MIN * INT32_MIN), then RoundingDivideByPOT as fixed_point.h writes
//     it, lane by lane; + zp saturating (the scalar adds in int64, the clamp that follows
//     gives the same byte), clamp.
#include <arm_neon.h>

#include "kernels/neon/neon_kernels.h"
#include "kernels/neon/simd_util.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

inline int32x4_t requant_float(int32x4_t biased, const float* fbias, const float* mult) {
  const float32x4_t t = vmulq_f32(vaddq_f32(vcvtq_f32_s32(biased), vld1q_f32(fbias)), vld1q_f32(mult));
  const int32x4_t y = neon::cvtps(t);
  return vminq_s32(vmaxq_s32(y, vdupq_n_s32(INT16_MIN)), vdupq_n_s32(INT16_MAX));
}

// oneDNN's order (kernels.h): the zero point and the clamp in float before the one rounding; the zero point
// is taken off again (exactly) because the caller adds it.
inline int32x4_t requant_onednn(int32x4_t biased, const RequantParams& p, int64_t c) {
  float32x4_t t = vmulq_f32(vmulq_f32(vcvtq_f32_s32(biased), vdupq_n_f32(p.src_scale)), vld1q_f32(p.w_scale + c));
  t = vaddq_f32(vmulq_f32(vaddq_f32(t, vld1q_f32(p.fbias + c)), vld1q_f32(p.mult + c)),
                vdupq_n_f32(static_cast<float>(p.zp)));
  t = vminq_f32(vmaxq_f32(t, vdupq_n_f32(static_cast<float>(p.lo))), vdupq_n_f32(static_cast<float>(p.hi)));
  return vsubq_s32(neon::cvtps(t), vdupq_n_s32(p.zp));
}

inline int32x4_t requant_fixed(int32x4_t biased, const int32_t* multiplier, const int32_t* shift) {
  const int32x4_t s = vld1q_s32(shift), zero = vdupq_n_s32(0);
  const int32x4_t left = vmaxq_s32(s, zero), right = vmaxq_s32(vnegq_s32(s), zero);
  const int32x4_t h = vqrdmulhq_s32(vshlq_s32(biased, left), vld1q_s32(multiplier));
  const int32x4_t mask = vsubq_s32(vshlq_s32(vdupq_n_s32(1), right), vdupq_n_s32(1));
  const int32x4_t remainder = vandq_s32(h, mask);
  // threshold = (mask >> 1) + (h < 0); the comparison's all-ones lane is -1
  const int32x4_t threshold = vsubq_s32(vshrq_n_s32(mask, 1), vreinterpretq_s32_u32(vcltq_s32(h, zero)));
  const int32x4_t rounded = vshlq_s32(h, vnegq_s32(right));
  return vsubq_s32(rounded, vreinterpretq_s32_u32(vcgtq_s32(remainder, threshold)));
}

}  // namespace

void requantize_neon(const int32_t* acc, int64_t m, int64_t n, int64_t ld_acc, const RequantParams& p, uint8_t* out,
                     int64_t ld_out) {
  const int64_t vec_n = n / 8 * 8;
  const bool fixed = p.fixed_multiplier != nullptr;
  const int32x4_t zp = vdupq_n_s32(p.zp), lo = vdupq_n_s32(p.lo), hi = vdupq_n_s32(p.hi);
  for (int64_t i = 0; i < m; ++i) {
    const int32_t* a = acc + i * ld_acc;
    uint8_t* o = out + i * ld_out;
    for (int64_t j = 0; j < vec_n; j += 8) {
      int32x4_t y[2];
      for (int h = 0; h < 2; ++h) {
        const int64_t c = j + 4 * h;
        const int32x4_t biased = vaddq_s32(vld1q_s32(a + c), vld1q_s32(p.ibias + c));
        const int32x4_t r = fixed      ? requant_fixed(biased, p.fixed_multiplier + c, p.fixed_shift + c)
                            : p.w_scale ? requant_onednn(biased, p, c)
                                        : requant_float(biased, p.fbias + c, p.mult + c);
        y[h] = vminq_s32(vmaxq_s32(vqaddq_s32(r, zp), lo), hi);
      }
      // Values are within [lo, hi] (8-bit): keeping the low byte stores them.
      vst1_u8(o + j, vreinterpret_u8_s8(vmovn_s16(vcombine_s16(vmovn_s32(y[0]), vmovn_s32(y[1])))));
    }
    if (vec_n < n) requantize_scalar(a + vec_n, 1, n - vec_n, ld_acc, p.columns_from(vec_n), o + vec_n, ld_out);
  }
}

}  // namespace qnnpy
