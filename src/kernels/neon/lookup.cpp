// NEON table lookup and quantized multiply, 16 elements a step (the remainder takes the scalar kernel):
//   lookup: a 256-byte table as four 64-byte tbl tables; tbl gives 0 and tbx keeps the lane
//     for an index past its 64 bytes, so each lane takes exactly one of the four lookups.
//   mul: PyTorch's qmul (scalar/lookup.cpp): cvtps(fl(float((a - a_zp) (b - b_zp)) * mult)) + zp.
#include <arm_neon.h>

#include "kernels/neon/neon_kernels.h"
#include "kernels/neon/simd_util.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

template <bool kSigned>
void mul_vector(const uint8_t* a, const uint8_t* b, int64_t n, const MulParams& p, uint8_t* out) {
  const int32x4_t a_zp = vdupq_n_s32(p.a_zp), b_zp = vdupq_n_s32(p.b_zp), out_zp = vdupq_n_s32(p.out_zp);
  const float32x4_t mult = vdupq_n_f32(p.mult);
  for (int64_t i = 0; i < n; i += 16) {
    int32x4_t qa[4], qb[4], y[4];
    neon::widen_16<kSigned>(a + i, qa);
    neon::widen_16<kSigned>(b + i, qb);
    for (int v = 0; v < 4; ++v) {
      const int32x4_t prod = vmulq_s32(vsubq_s32(qa[v], a_zp), vsubq_s32(qb[v], b_zp));
      const int32x4_t q = neon::cvtps(vmulq_f32(vcvtq_f32_s32(prod), mult));
      y[v] = neon::clamp(vqaddq_s32(q, out_zp), p.lo, p.hi);  // the scalar adds in int64
    }
    neon::store_16(out + i, y);
  }
}

}  // namespace

void lookup_neon(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* out) {
  const uint8x16x4_t t0 = vld1q_u8_x4(table), t1 = vld1q_u8_x4(table + 64);
  const uint8x16x4_t t2 = vld1q_u8_x4(table + 128), t3 = vld1q_u8_x4(table + 192);
  const uint8x16_t step = vdupq_n_u8(64);
  const int64_t vec_n = n / 16 * 16;
  for (int64_t i = 0; i < vec_n; i += 16) {
    uint8x16_t idx = vld1q_u8(x + i);
    uint8x16_t r = vqtbl4q_u8(t0, idx);
    idx = vsubq_u8(idx, step);
    r = vqtbx4q_u8(r, t1, idx);
    idx = vsubq_u8(idx, step);
    r = vqtbx4q_u8(r, t2, idx);
    idx = vsubq_u8(idx, step);
    vst1q_u8(out + i, vqtbx4q_u8(r, t3, idx));
  }
  lookup_scalar(x + vec_n, n - vec_n, table, out + vec_n);
}

void mul_neon(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const MulParams& p, uint8_t* out) {
  const int64_t vec_n = n / 16 * 16;
  if (is_signed) {
    mul_vector<true>(a, b, vec_n, p, out);
  } else {
    mul_vector<false>(a, b, vec_n, p, out);
  }
  mul_scalar(a + vec_n, b + vec_n, n - vec_n, is_signed, p, out + vec_n);
}

}  // namespace qnnpy
