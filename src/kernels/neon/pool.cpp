// NEON pooling kernels (NHWC), 16 channels a step; the last c % 16 channels take the scalar
// formulas (scalar/pool.cpp, scalar/avg_pool.cpp).
//   max_pool2d: umax / smax over the in-bounds taps (kernels/max_pool_walk.h).
//   adaptive_avg_pool2d, avg_pool2d: int32 window sums (uaddw / saddw), then the rules of
//     kernels.h in float lane by lane (x86's conversion: simd_util.h).
#include <arm_neon.h>

#include "kernels/max_pool_walk.h"
#include "kernels/neon/neon_kernels.h"
#include "kernels/neon/simd_util.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

// Window sums of 16 channels starting at x (pixel stride c), over rows [y0, y1) x columns [x0, x1).
template <bool kSigned>
void window_sums(const uint8_t* x, int64_t w, int64_t c, int64_t y0, int64_t y1, int64_t x0, int64_t x1,
                 int32x4_t sum[4]) {
  for (int v = 0; v < 4; ++v) sum[v] = vdupq_n_s32(0);
  for (int64_t iy = y0; iy < y1; ++iy)
    for (int64_t ix = x0; ix < x1; ++ix) {
      int32x4_t q[4];
      neon::widen_16<kSigned>(x + (iy * w + ix) * c, q);
      for (int v = 0; v < 4; ++v) sum[v] = vaddq_s32(sum[v], q[v]);
    }
}

template <bool kSigned>
int32_t window_sum_scalar(const uint8_t* x, int64_t w, int64_t c, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  int32_t sum = 0;
  for (int64_t iy = y0; iy < y1; ++iy)
    for (int64_t ix = x0; ix < x1; ++ix) sum += load_q(x, (iy * w + ix) * c, kSigned);
  return sum;
}

template <bool kSigned>
void max_pool(const uint8_t* x, const Pool2dShape& s, uint8_t* out) {
  const int64_t vec_c = s.c / 16 * 16;
  for_each_max_pool_window(x, s, out, [&](const MaxPoolWindow& win, uint8_t* o) {
    for (int64_t ch = 0; ch < vec_c; ch += 16) {
      if constexpr (kSigned) {
        int8x16_t best = vdupq_n_s8(-128);
        for (int64_t ky = win.ky0; ky < win.ky1; ++ky) {
          const int8_t* row = reinterpret_cast<const int8_t*>(win.row(s, ky) + ch);
          for (int64_t kx = win.kx0; kx < win.kx1; ++kx) best = vmaxq_s8(best, vld1q_s8(row + win.column(s, kx)));
        }
        vst1q_s8(reinterpret_cast<int8_t*>(o + ch), best);
      } else {
        uint8x16_t best = vdupq_n_u8(0);
        for (int64_t ky = win.ky0; ky < win.ky1; ++ky) {
          const uint8_t* row = win.row(s, ky) + ch;
          for (int64_t kx = win.kx0; kx < win.kx1; ++kx) best = vmaxq_u8(best, vld1q_u8(row + win.column(s, kx)));
        }
        vst1q_u8(o + ch, best);
      }
    }
    max_pool_channels_left<kSigned>(win, s, vec_c, o);
  });
}

template <bool kSigned>
void adaptive_avg_pool(const uint8_t* x, const Pool2dShape& s, const AdaptivePoolParams& p, uint8_t* out) {
  const int32_t zp = p.rule == AvgPoolRule::FbgemmNchw ? 0 : p.zp;
  const int64_t vec_c = s.c / 16 * 16;
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      const int64_t y0 = adaptive_start(oy, s.h, s.oh), y1 = adaptive_end(oy, s.h, s.oh);
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const int64_t x0 = adaptive_start(ox, s.w, s.ow), x1 = adaptive_end(ox, s.w, s.ow);
        const int32_t count = static_cast<int32_t>((y1 - y0) * (x1 - x0));
        const float mult = adaptive_multiplier(p, y1 - y0, x1 - x0);
        const uint8_t* in = x + b * s.h * s.w * s.c;
        uint8_t* o = out + ((b * s.oh + oy) * s.ow + ox) * s.c;
        for (int64_t ch = 0; ch < vec_c; ch += 16) {
          int32x4_t sum[4], y[4];
          window_sums<kSigned>(in + ch, s.w, s.c, y0, y1, x0, x1, sum);
          for (int v = 0; v < 4; ++v) {
            // avg_pool_output: cvtps(fl(float(sum - zp * count) * mult)) + zp (the scalar adds in int64)
            const int32x4_t acc = vsubq_s32(sum[v], vdupq_n_s32(zp * count));
            const int32x4_t q = neon::cvtps(vmulq_f32(vcvtq_f32_s32(acc), vdupq_n_f32(mult)));
            y[v] = neon::clamp(vqaddq_s32(q, vdupq_n_s32(zp)), p.lo, p.hi);
          }
          neon::store_16(o + ch, y);
        }
        for (int64_t ch = vec_c; ch < s.c; ++ch) {
          const int32_t sum = window_sum_scalar<kSigned>(in + ch, s.w, s.c, y0, y1, x0, x1);
          store_q(o, ch, avg_pool_output(sum, count, mult, zp, p.lo, p.hi));
        }
      }
    }
}

template <bool kSigned>
void avg_pool(const uint8_t* x, const Pool2dShape& s, const AvgPool2dParams& p, uint8_t* out) {
  const int64_t vec_c = s.c / 16 * 16, vector_channels = s.c / 8 * 8;
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const AvgPoolTaps t = avg_pool_taps(s, p, oy, ox);
        const uint8_t* in = x + b * s.h * s.w * s.c;
        uint8_t* o = out + ((b * s.oh + oy) * s.ow + ox) * s.c;
        for (int64_t ch = 0; ch < vec_c; ch += 16) {
          int32x4_t sum[4], y[4];
          window_sums<kSigned>(in + ch, s.w, s.c, t.y.start, t.y.end, t.x.start, t.x.end, sum);
          for (int v = 0; v < 4; ++v) {
            // Channels from 8 floor(c / 8) on take the tail multiplier (kernels.h); 4-lane groups never straddle it.
            const float mult = ch + 4 * v < vector_channels ? t.vector_mult : t.tail_mult;
            const float32x4_t scaled =
                vmulq_f32(vcvtq_f32_s32(vsubq_s32(sum[v], vdupq_n_s32(p.zp * t.taps))), vdupq_n_f32(mult));
            int32x4_t q;
            if (p.rule == AvgPool2dRule::Nchw) {
              q = vcvtnq_s32_f32(vaddq_f32(scaled, vdupq_n_f32(static_cast<float>(p.zp))));  // nearbyint(x + zp)
            } else {
              q = vqaddq_s32(neon::cvtps(scaled), vdupq_n_s32(p.zp));
            }
            y[v] = neon::clamp(q, p.lo, p.hi);
          }
          neon::store_16(o + ch, y);
        }
        for (int64_t ch = vec_c; ch < s.c; ++ch) {
          const int32_t sum = window_sum_scalar<kSigned>(in + ch, s.w, s.c, t.y.start, t.y.end, t.x.start, t.x.end);
          const float mult = ch < vector_channels ? t.vector_mult : t.tail_mult;
          store_q(o, ch, avg_pool2d_output(sum - p.zp * t.taps, mult, p));
        }
      }
}

}  // namespace

void max_pool2d_neon(const uint8_t* x, const Pool2dShape& s, bool is_signed, uint8_t* out) {
  if (is_signed) {
    max_pool<true>(x, s, out);
  } else {
    max_pool<false>(x, s, out);
  }
}

void adaptive_avg_pool2d_neon(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AdaptivePoolParams& p,
                              uint8_t* out) {
  if (is_signed) {
    adaptive_avg_pool<true>(x, s, p, out);
  } else {
    adaptive_avg_pool<false>(x, s, p, out);
  }
}

void avg_pool2d_neon(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out) {
  if (is_signed) {
    avg_pool<true>(x, s, p, out);
  } else {
    avg_pool<false>(x, s, p, out);
  }
}

}  // namespace qnnpy
