// Scalar reference of the depthwise row kernel (exact int32 sums).
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void depthwise_row_scalar(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                          int32_t* acc) {
  const int64_t taps = s.kh * s.kw;
  for (int64_t ox = 0; ox < s.ow; ++ox)
    for (int64_t ch = 0; ch < s.c; ++ch) {
      int32_t sum = 0;
      for (int64_t t = 0; t < taps; ++t) {
        const uint8_t* in = x + (t / s.kw) * s.dh * s.row_stride + (ox * s.sw + (t % s.kw) * s.dw) * s.c;
        sum += load_q(in, ch, is_signed) * w_pairs[((t / 2) * s.c + ch) * 2 + t % 2];
      }
      acc[ox * s.c + ch] = sum;
    }
}

}  // namespace qnnpy
