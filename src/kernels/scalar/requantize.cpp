// Scalar requantization of int32 accumulators (formulas in kernels.h).
#include <cmath>

#include "kernels/fixed_point.h"
#include "kernels/rounding.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void requantize_scalar(const int32_t* acc, int64_t m, int64_t n, int64_t ld_acc, const RequantParams& p, uint8_t* out,
                       int64_t ld_out) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      // int32 add wraps as the SIMD add does.
      int32_t biased = static_cast<int32_t>(static_cast<uint32_t>(acc[i * ld_acc + j]) + static_cast<uint32_t>(p.ibias[j]));
      int32_t y;
      if (p.fixed_multiplier) {
        y = multiply_by_quantized_multiplier(biased, p.fixed_multiplier[j], p.fixed_shift[j]);
      } else if (p.w_scale) {  // oneDNN: the zero point and the clamp in float, then one rounding
        const float t = static_cast<float>(biased) * p.src_scale * p.w_scale[j] + p.fbias[j];
        const float shifted = t * p.mult[j] + static_cast<float>(p.zp);
        const float clamped = std::fmin(std::fmax(shifted, static_cast<float>(p.lo)), static_cast<float>(p.hi));
        store_q(out, i * ld_out + j, cvtps_epi32(clamped));
        continue;
      } else {
        float t = static_cast<float>(biased) + p.fbias[j];
        // packs_epi32 saturates to int16 before the zero point is added.
        y = clamp_i32(cvtps_epi32(t * p.mult[j]), INT16_MIN, INT16_MAX);
      }
      store_q(out, i * ld_out + j, clamp_i32(int64_t{y} + p.zp, p.lo, p.hi));
    }
  }
}

}  // namespace qnnpy
