// Scalar pooling kernels (NHWC).
#include <algorithm>

#include "kernels/rounding.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

// Max over the in-bounds taps only: padding never wins (PyTorch's quantized max_pool2d).
void max_pool2d_scalar(const uint8_t* x, const Pool2dShape& s, bool is_signed, uint8_t* out) {
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox)
        for (int64_t ch = 0; ch < s.c; ++ch) {
          int32_t best = is_signed ? -128 : 0;
          for (int64_t ky = 0; ky < s.kh; ++ky) {
            int64_t iy = oy * s.sh - s.ph + ky * s.dh;
            if (iy < 0 || iy >= s.h) continue;
            for (int64_t kx = 0; kx < s.kw; ++kx) {
              int64_t ix = ox * s.sw - s.pw + kx * s.dw;
              if (ix < 0 || ix >= s.w) continue;
              best = std::max(best, load_q(x, ((b * s.h + iy) * s.w + ix) * s.c + ch, is_signed));
            }
          }
          store_q(out, ((b * s.oh + oy) * s.ow + ox) * s.c + ch, best);
        }
}

int32_t avg_pool_output(int32_t sum, int32_t count, float mult, int32_t zp, int32_t lo, int32_t hi) {
  const int32_t y = cvtps_epi32(static_cast<float>(sum - zp * count) * mult);
  return clamp_i32(int64_t{y} + zp, lo, hi);
}

void adaptive_avg_pool2d_scalar(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AdaptivePoolParams& p,
                                uint8_t* out) {
  const int32_t zp = p.rule == AvgPoolRule::FbgemmNchw ? 0 : p.zp;
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      const int64_t y0 = adaptive_start(oy, s.h, s.oh), y1 = adaptive_end(oy, s.h, s.oh);
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const int64_t x0 = adaptive_start(ox, s.w, s.ow), x1 = adaptive_end(ox, s.w, s.ow);
        const int64_t count = (y1 - y0) * (x1 - x0);
        const float mult = adaptive_multiplier(p, y1 - y0, x1 - x0);
        for (int64_t ch = 0; ch < s.c; ++ch) {
          int32_t sum = 0;
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) sum += load_q(x, ((b * s.h + iy) * s.w + ix) * s.c + ch, is_signed);
          store_q(out, ((b * s.oh + oy) * s.ow + ox) * s.c + ch,
                  avg_pool_output(sum, static_cast<int32_t>(count), mult, zp, p.lo, p.hi));
        }
      }
    }
}

}  // namespace qnnpy
