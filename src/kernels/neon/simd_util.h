// Small NEON helpers shared by the NEON kernels.
#pragma once

#include <arm_neon.h>

#include <cstdint>

namespace qnnpy::neon {

// cvtps_epi32 (kernels/rounding.h) on 4 lanes: fcvtns rounds half to even; NaN and values
// outside int32 give INT32_MIN, as x86's conversion does (fcvtns would saturate them).
inline int32x4_t cvtps(float32x4_t f) {
  const uint32x4_t in_range = vandq_u32(vcgeq_f32(f, vdupq_n_f32(-2147483648.0f)), vcltq_f32(f, vdupq_n_f32(2147483648.0f)));
  return vbslq_s32(in_range, vcvtnq_s32_f32(f), vdupq_n_s32(INT32_MIN));
}

// 16 bytes (uint8 or int8 per kSigned) as 4 x 4 int32 lanes.
template <bool kSigned>
inline void widen_16(const uint8_t* p, int32x4_t out[4]) {
  if (kSigned) {
    const int8x16_t v = vld1q_s8(reinterpret_cast<const int8_t*>(p));
    const int16x8_t lo = vmovl_s8(vget_low_s8(v)), hi = vmovl_high_s8(v);
    out[0] = vmovl_s16(vget_low_s16(lo)), out[1] = vmovl_high_s16(lo);
    out[2] = vmovl_s16(vget_low_s16(hi)), out[3] = vmovl_high_s16(hi);
  } else {
    const uint8x16_t v = vld1q_u8(p);
    const uint16x8_t lo = vmovl_u8(vget_low_u8(v)), hi = vmovl_high_u8(v);
    out[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo))), out[1] = vreinterpretq_s32_u32(vmovl_high_u16(lo));
    out[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi))), out[3] = vreinterpretq_s32_u32(vmovl_high_u16(hi));
  }
}

// Stores the low byte of 16 int32 lanes (values already clamped to the 8-bit range).
inline void store_16(uint8_t* p, const int32x4_t v[4]) {
  const int16x8_t lo = vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1]));
  const int16x8_t hi = vcombine_s16(vmovn_s32(v[2]), vmovn_s32(v[3]));
  vst1q_u8(p, vreinterpretq_u8_s8(vcombine_s8(vmovn_s16(lo), vmovn_s16(hi))));
}

inline int32x4_t clamp(int32x4_t v, int32_t lo, int32_t hi) {
  return vminq_s32(vmaxq_s32(v, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

}  // namespace qnnpy::neon
