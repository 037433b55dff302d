// NEON element-wise kernels, 16 elements a step (the remainder takes the scalar kernel):
//   add_float: PyTorch's qadd (scalar/elementwise.cpp). Its first n - n % 64 elements use the
//     vector-lane dequantization fma(s, q, fl(s * -zp)) (fmla), the rest the scalar-lane one;
//     fmaxnm / fminnm give std::fmax / std::fmin; x86's conversion (simd_util.h).
//   add_fixed: QNNPACK's q8vadd in wrapping int32 (mul, mla), its rounding shift lane by lane.
//   relu: max(x, zp) on bytes.
#include <arm_neon.h>

#include "kernels/neon/neon_kernels.h"
#include "kernels/neon/simd_util.h"
#include "kernels/rounding.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

template <bool kSigned>
void add_float_vector(const uint8_t* a, const uint8_t* b, int64_t n, const AddFloatParams& p, uint8_t* out) {
  const float32x4_t sa = vdupq_n_f32(p.a_scale), sb = vdupq_n_f32(p.b_scale), inv = vdupq_n_f32(p.inv_out_scale);
  const float32x4_t ca = vdupq_n_f32(p.a_scale * -static_cast<float>(p.a_zp));
  const float32x4_t cb = vdupq_n_f32(p.b_scale * -static_cast<float>(p.b_zp));
  const float32x4_t zero = vdupq_n_f32(0.0f), bound = vdupq_n_f32(kQuantizeUpperBound);
  for (int64_t i = 0; i < n; i += 16) {
    int32x4_t qa[4], qb[4], y[4];
    neon::widen_16<kSigned>(a + i, qa);
    neon::widen_16<kSigned>(b + i, qb);
    for (int v = 0; v < 4; ++v) {
      const float32x4_t da = vfmaq_f32(ca, sa, vcvtq_f32_s32(qa[v]));
      const float32x4_t db = vfmaq_f32(cb, sb, vcvtq_f32_s32(qb[v]));
      float32x4_t c = vaddq_f32(da, db);
      if (p.relu) c = vmaxnmq_f32(c, zero);
      const int32x4_t q = neon::cvtps(vminnmq_f32(vmulq_f32(c, inv), bound));
      y[v] = neon::clamp(vaddq_s32(q, vdupq_n_s32(p.out_zp)), p.lo, p.hi);  // the int32 add wraps, as the scalar one
    }
    neon::store_16(out + i, y);
  }
}

template <bool kSigned>
void add_fixed_vector(const uint8_t* a, const uint8_t* b, int64_t n, const AddFixedParams& p, uint8_t* out) {
  const int32x4_t am = vdupq_n_s32(p.a_mult), bm = vdupq_n_s32(p.b_mult), zp_term = vdupq_n_s32(p.zp_term);
  const int32x4_t mask = vdupq_n_s32(static_cast<int32_t>((uint32_t{1} << p.shift) - 1));
  const int32x4_t threshold = vshrq_n_s32(mask, 1), neg_shift = vdupq_n_s32(-p.shift), zero = vdupq_n_s32(0);
  for (int64_t i = 0; i < n; i += 16) {
    int32x4_t qa[4], qb[4], y[4];
    neon::widen_16<kSigned>(a + i, qa);
    neon::widen_16<kSigned>(b + i, qb);
    for (int v = 0; v < 4; ++v) {
      const int32x4_t acc = vmlaq_s32(vmlaq_s32(zp_term, qa[v], am), qb[v], bm);
      // remainder = (acc & mask) - (acc < 0); the comparison's all-ones lane is -1
      const int32x4_t remainder = vaddq_s32(vandq_s32(acc, mask), vreinterpretq_s32_u32(vcltq_s32(acc, zero)));
      const int32x4_t shifted = vshlq_s32(acc, neg_shift);
      const int32x4_t r = vsubq_s32(shifted, vreinterpretq_s32_u32(vcgtq_s32(remainder, threshold)));
      y[v] = neon::clamp(vqaddq_s32(r, vdupq_n_s32(p.out_zp)), p.lo, p.hi);
    }
    neon::store_16(out + i, y);
  }
}

}  // namespace

void add_float_neon(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFloatParams& p,
                    uint8_t* out) {
  const int64_t vector_end = n - n % kTorchVectorBlock;  // a multiple of 16
  if (is_signed) {
    add_float_vector<true>(a, b, vector_end, p, out);
  } else {
    add_float_vector<false>(a, b, vector_end, p, out);
  }
  // Fewer than 64 elements left: the scalar kernel takes them all as PyTorch's scalar lanes.
  add_float_scalar(a + vector_end, b + vector_end, n - vector_end, is_signed, p, out + vector_end);
}

void add_fixed_neon(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFixedParams& p,
                    uint8_t* out) {
  const int64_t vec_n = n / 16 * 16;
  if (is_signed) {
    add_fixed_vector<true>(a, b, vec_n, p, out);
  } else {
    add_fixed_vector<false>(a, b, vec_n, p, out);
  }
  add_fixed_scalar(a + vec_n, b + vec_n, n - vec_n, is_signed, p, out + vec_n);
}

void relu_neon(const uint8_t* x, int64_t n, bool is_signed, int32_t zp, uint8_t* out) {
  const int64_t vec_n = n / 16 * 16;
  if (is_signed) {
    const int8x16_t z = vdupq_n_s8(static_cast<int8_t>(zp));
    for (int64_t i = 0; i < vec_n; i += 16) {
      vst1q_s8(reinterpret_cast<int8_t*>(out + i), vmaxq_s8(vld1q_s8(reinterpret_cast<const int8_t*>(x + i)), z));
    }
  } else {
    const uint8x16_t z = vdupq_n_u8(static_cast<uint8_t>(zp));
    for (int64_t i = 0; i < vec_n; i += 16) vst1q_u8(out + i, vmaxq_u8(vld1q_u8(x + i), z));
  }
  relu_scalar(x + vec_n, n - vec_n, is_signed, zp, out + vec_n);
}

}  // namespace qnnpy
