// Scalar quantized batch norm (NHWC rows).
#include <cmath>

#include "kernels/rounding.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

int32_t batch_norm_one(int32_t q, float alpha, float beta, const BatchNormParams& p, bool vector_lane) {
  const float x = static_cast<float>(q - p.in_zp);
  const float v = vector_lane ? std::fma(alpha, x, beta) : alpha * x + beta;
  return clamp_i32(int64_t{cvtps_epi32(v)} + p.out_zp, p.lo, p.hi);
}

void batch_norm_scalar(const uint8_t* x, int64_t pixels, int64_t c, bool is_signed, const BatchNormParams& p,
                       uint8_t* out) {
  const int64_t vector_channels = c / 8 * 8;
  for (int64_t i = 0; i < pixels; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t e = i * c + ch;
      store_q(out, e, batch_norm_one(load_q(x, e, is_signed), p.alpha[ch], p.beta[ch], p, ch < vector_channels));
    }
}

}  // namespace qnnpy
