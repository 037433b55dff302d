// Scalar 3-D average pools over NCDHW storage (scalar_kernels.h). PyTorch computes its quantized 2-D and 3-D
// pools with one kernel each (QuantizedOpKernels.cpp: _qavg_pool_nhwc_kernel, _qadaptive_avg_pool_kernel; 2-D
// is depth 1), so the windows, divisors and multipliers are the 2-D ones with a depth axis: the integer sum of
// a window's values is exact in any order, and only the channel's index selects the multiplier.
#include <stdexcept>

#include "kernels/rounding.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

// The sum of channel plane `plane` (n * c + ch) over [d0, d1) x [y0, y1) x [x0, x1).
int32_t window_sum(const uint8_t* x, const Pool3dShape& s, bool is_signed, int64_t plane, int64_t d0, int64_t d1,
                   int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  int32_t sum = 0;
  for (int64_t id = d0; id < d1; ++id)
    for (int64_t iy = y0; iy < y1; ++iy)
      for (int64_t ix = x0; ix < x1; ++ix) sum += load_q(x, ((plane * s.d + id) * s.h + iy) * s.w + ix, is_signed);
  return sum;
}

}  // namespace

void avg_pool3d_scalar(const uint8_t* x, const Pool3dShape& s, bool is_signed, const AvgPool2dParams& p, uint8_t* out) {
  if (p.rule != AvgPool2dRule::Nhwc) throw std::logic_error("avg_pool3d has PyTorch's NDHWC rule only");
  const int64_t vector_channels = s.c / 8 * 8;
  for (int64_t od = 0; od < s.od; ++od) {
    const PoolWindow wd = avg_pool_window(od, s.d, s.kd, s.sd, s.pd);
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      const PoolWindow wy = avg_pool_window(oy, s.h, s.kh, s.sh, s.ph);
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const PoolWindow wx = avg_pool_window(ox, s.w, s.kw, s.sw, s.pw);
        const int64_t taps = (wd.end - wd.start) * (wy.end - wy.start) * (wx.end - wx.start);
        const int64_t divisor = p.divisor_override ? p.divisor_override
                                                   : (p.count_include_pad ? wd.padded_size * wy.padded_size * wx.padded_size : taps);
        const auto [vector_mult, tail_mult] = avg_pool2d_multipliers(p.rule, divisor);
        for (int64_t b = 0; b < s.n; ++b)
          for (int64_t ch = 0; ch < s.c; ++ch) {
            const int64_t plane = b * s.c + ch;
            const int32_t sum = window_sum(x, s, is_signed, plane, wd.start, wd.end, wy.start, wy.end, wx.start, wx.end);
            const float mult = ch < vector_channels ? vector_mult : tail_mult;
            store_q(out, ((plane * s.od + od) * s.oh + oy) * s.ow + ox,
                    avg_pool2d_output(sum - p.zp * static_cast<int32_t>(taps), mult, p));
          }
      }
    }
  }
}

void adaptive_avg_pool3d_scalar(const uint8_t* x, const Pool3dShape& s, bool is_signed, const AdaptivePoolParams& p,
                                uint8_t* out) {
  if (p.rule == AvgPoolRule::Qnnpack) throw std::logic_error("adaptive_avg_pool3d has no QNNPACK rule in PyTorch");
  const int32_t zp = p.rule == AvgPoolRule::FbgemmNchw ? 0 : p.zp;  // the contiguous rule averages the raw values
  for (int64_t od = 0; od < s.od; ++od) {
    const int64_t d0 = adaptive_start(od, s.d, s.od), d1 = adaptive_end(od, s.d, s.od);
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      const int64_t y0 = adaptive_start(oy, s.h, s.oh), y1 = adaptive_end(oy, s.h, s.oh);
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const int64_t x0 = adaptive_start(ox, s.w, s.ow), x1 = adaptive_end(ox, s.w, s.ow);
        const int64_t count = (d1 - d0) * (y1 - y0) * (x1 - x0);
        const float mult = adaptive_multiplier3d(p, d1 - d0, y1 - y0, x1 - x0);
        for (int64_t plane = 0; plane < s.n * s.c; ++plane) {
          const int32_t sum = window_sum(x, s, is_signed, plane, d0, d1, y0, y1, x0, x1);
          store_q(out, ((plane * s.od + od) * s.oh + oy) * s.ow + ox,
                  avg_pool_output(sum, static_cast<int32_t>(count), mult, zp, p.lo, p.hi));
        }
      }
    }
  }
}

}  // namespace qnnpy
