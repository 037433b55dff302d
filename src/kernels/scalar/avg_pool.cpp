// Scalar avg_pool2d (NHWC storage) with PyTorch's rules (kernels.h AvgPool2dRule).
#include <tuple>

#include "kernels/rounding.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

AvgPoolTaps avg_pool_taps(const Pool2dShape& s, const AvgPool2dParams& p, int64_t oy, int64_t ox) {
  AvgPoolTaps t;
  t.y = avg_pool_window(oy, s.h, s.kh, s.sh, s.ph);
  t.x = avg_pool_window(ox, s.w, s.kw, s.sw, s.pw);
  t.taps = static_cast<int32_t>((t.y.end - t.y.start) * (t.x.end - t.x.start));
  const int64_t divisor = p.divisor_override ? p.divisor_override
                                             : (p.count_include_pad ? t.y.padded_size * t.x.padded_size : t.taps);
  if (p.rule == AvgPool2dRule::Qnnpack) {
    t.vector_mult = t.tail_mult = p.qnnpack_mult;
  } else {
    std::tie(t.vector_mult, t.tail_mult) = avg_pool2d_multipliers(p.rule, divisor);
  }
  return t;
}

int32_t avg_pool2d_output(int32_t acc, float mult, const AvgPool2dParams& p) {
  const float scaled = static_cast<float>(acc) * mult;
  if (p.rule == AvgPool2dRule::Nchw) {
    return clamp_i32(static_cast<int64_t>(std::nearbyint(scaled + static_cast<float>(p.zp))), p.lo, p.hi);
  }
  return clamp_i32(int64_t{cvtps_epi32(scaled)} + p.zp, p.lo, p.hi);
}

void avg_pool2d_scalar(const uint8_t* x, const Pool2dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out) {
  const int64_t vector_channels = s.c / 8 * 8;
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const AvgPoolTaps t = avg_pool_taps(s, p, oy, ox);
        for (int64_t ch = 0; ch < s.c; ++ch) {
          int32_t sum = 0;
          for (int64_t iy = t.y.start; iy < t.y.end; ++iy)
            for (int64_t ix = t.x.start; ix < t.x.end; ++ix) sum += load_q(x, ((b * s.h + iy) * s.w + ix) * s.c + ch, is_signed);
          const float mult = ch < vector_channels ? t.vector_mult : t.tail_mult;
          store_q(out, ((b * s.oh + oy) * s.ow + ox) * s.c + ch, avg_pool2d_output(sum - p.zp * t.taps, mult, p));
        }
      }
}

}  // namespace qnnpy
