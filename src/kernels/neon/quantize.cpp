// NEON quantize and dequantize, 16 elements a step (the remainder takes the scalar kernel):
//   quantize:   y = clamp(cvtps(fminnm(x * inv_scale, 2147483520)) + zp) (the int32 add wraps;
//               fminnm returns the bound for NaN, as std::fmin does)
//   dequantize: scale * float(q - zp)
#include <arm_neon.h>

#include "kernels/neon/neon_kernels.h"
#include "kernels/neon/simd_util.h"
#include "kernels/rounding.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

template <bool kSigned>
void dequantize_vector(const uint8_t* q, int64_t n, float scale, int32_t zp, float* out) {
  const float32x4_t s = vdupq_n_f32(scale);
  const int32x4_t z = vdupq_n_s32(zp);
  for (int64_t i = 0; i < n; i += 16) {
    int32x4_t v[4];
    neon::widen_16<kSigned>(q + i, v);
    for (int j = 0; j < 4; ++j) vst1q_f32(out + i + 4 * j, vmulq_f32(s, vcvtq_f32_s32(vsubq_s32(v[j], z))));
  }
}

}  // namespace

void quantize_neon(const float* x, int64_t n, float inv_scale, int32_t zp, int32_t lo, int32_t hi, uint8_t* out) {
  const int64_t vec_n = n / 16 * 16;
  const float32x4_t inv = vdupq_n_f32(inv_scale), bound = vdupq_n_f32(kQuantizeUpperBound);
  const int32x4_t z = vdupq_n_s32(zp);
  for (int64_t i = 0; i < vec_n; i += 16) {
    int32x4_t y[4];
    for (int j = 0; j < 4; ++j) {
      const int32x4_t q = neon::cvtps(vminnmq_f32(vmulq_f32(vld1q_f32(x + i + 4 * j), inv), bound));
      y[j] = neon::clamp(vaddq_s32(q, z), lo, hi);
    }
    neon::store_16(out + i, y);
  }
  quantize_scalar(x + vec_n, n - vec_n, inv_scale, zp, lo, hi, out + vec_n);
}

void dequantize_neon(const uint8_t* q, int64_t n, bool is_signed, float scale, int32_t zp, float* out) {
  const int64_t vec_n = n / 16 * 16;
  if (is_signed) {
    dequantize_vector<true>(q, vec_n, scale, zp, out);
  } else {
    dequantize_vector<false>(q, vec_n, scale, zp, out);
  }
  dequantize_scalar(q + vec_n, n - vec_n, is_signed, scale, zp, out + vec_n);
}

}  // namespace qnnpy
