// Packing of depthwise weights in pairs of taps (layout in kernels.h).
#include "kernels/kernels.h"

namespace qnnpy {

void pack_depthwise_pairs(const int16_t* w, int64_t taps, int64_t c, int16_t* out) {
  const int64_t pairs = (taps + 1) / 2;
  for (int64_t p = 0; p < pairs; ++p)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t t = 2 * p + h;
        out[(p * c + ch) * 2 + h] = t < taps ? w[t * c + ch] : 0;
      }
}

}  // namespace qnnpy
