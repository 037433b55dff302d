// Scalar: the grouped linear on int4 weights (kernels.h, Int4Groups), straight from the definition.
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void int4_group_sums_scalar(const Int4Groups& a) {
  const int64_t groups = a.k / a.group;
  for (int64_t r = 0; r < a.m; ++r)
    for (int64_t col = 0; col < a.n; ++col) {
      const int64_t b = col / kInt4Block, j = col % kInt4Block;
      const uint8_t* w = a.w + b * 8 * a.k;
      float sum = 0.0f;
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t at = (b * groups + g) * kInt4Block + j;
        const int32_t zw = a.zero_point ? a.zero_point[at] : 0;
        int32_t s = 0;
        for (int64_t i = g * a.group; i < (g + 1) * a.group; ++i) {
          const uint8_t byte = w[i / 8 * 64 + 4 * j + i % 4];
          const int32_t value = (i % 8 < 4 ? byte & 0x0F : byte >> 4) - 8;
          s += (a.q[r * a.k + i] - a.zx[r]) * (value - zw);
        }
        sum += a.scale[at] * static_cast<float>(s);
      }
      a.sums[r * a.ld_sums + col] = sum;
    }
}

}  // namespace qnnpy
