// Packing of depthwise weights in pairs of taps and in quads of kernel rows (layouts in kernels.h).
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

void pack_depthwise_quads(const int16_t* w, int64_t kh, int64_t kw, int64_t c, int64_t groups, int64_t shifts,
                          int8_t* out) {
  for (int64_t r = 0; r < shifts; ++r)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t kx = 0; kx < kw; ++kx)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t j = 0; j < 4; ++j) {
            const int64_t ky = 4 * g + j - r;
            const bool in_window = ky >= 0 && ky < kh;
            *out++ = in_window ? static_cast<int8_t>(w[(ky * kw + kx) * c + ch]) : int8_t{0};
          }
}

}  // namespace qnnpy
