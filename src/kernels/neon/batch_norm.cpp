// NEON quantized batch norm over NHWC rows, 4 channels a step (the last c % 4 take the scalar
// formula): PyTorch's vector lanes (channels below 8 floor(c / 8)) use fma (fmla), its scalar
// tail fl(fl(alpha x) + beta) (kernels.h); 4-channel groups never straddle that boundary.
#include <arm_neon.h>

#include "kernels/neon/neon_kernels.h"
#include "kernels/neon/simd_util.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void batch_norm_neon(const uint8_t* x, int64_t pixels, int64_t c, bool is_signed, const BatchNormParams& p,
                     uint8_t* out) {
  const int64_t vector_channels = c / 8 * 8, vec_c = c / 4 * 4;
  const int32x4_t in_zp = vdupq_n_s32(p.in_zp), out_zp = vdupq_n_s32(p.out_zp);
  for (int64_t i = 0; i < pixels; ++i) {
    const uint8_t* row = x + i * c;
    uint8_t* o = out + i * c;
    for (int64_t ch = 0; ch < vec_c; ch += 4) {
      int32_t q[4];
      for (int l = 0; l < 4; ++l) q[l] = load_q(row, ch + l, is_signed);
      const float32x4_t v = vcvtq_f32_s32(vsubq_s32(vld1q_s32(q), in_zp));
      const float32x4_t alpha = vld1q_f32(p.alpha + ch), beta = vld1q_f32(p.beta + ch);
      const float32x4_t y = ch < vector_channels ? vfmaq_f32(beta, alpha, v) : vaddq_f32(vmulq_f32(alpha, v), beta);
      int32_t r[4];
      vst1q_s32(r, neon::clamp(vqaddq_s32(neon::cvtps(y), out_zp), p.lo, p.hi));
      for (int l = 0; l < 4; ++l) store_q(o, ch + l, r[l]);
    }
    for (int64_t ch = vec_c; ch < c; ++ch) {
      store_q(o, ch, batch_norm_one(load_q(row, ch, is_signed), p.alpha[ch], p.beta[ch], p, ch < vector_channels));
    }
  }
}

}  // namespace qnnpy
