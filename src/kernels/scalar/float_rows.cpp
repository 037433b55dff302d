// Scalar: attention's two float loops (kernels.h, float_dots and weighted_rows), the order every set keeps.
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void float_dots_scalar(const float* x, const float* rows, int64_t ld, int64_t count, int64_t n, float* out) {
  for (int64_t j = 0; j < count; ++j) {
    const float* y = rows + j * ld;
    float part[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      for (int l = 0; l < 8; ++l) part[l] += x[i + l] * y[i + l];
    }
    for (int l = 0; i < n; ++i, ++l) part[l] += x[i] * y[i];
    for (int l = 0; l < 4; ++l) part[l] += part[l + 4];
    for (int l = 0; l < 2; ++l) part[l] += part[l + 2];
    out[j] = part[0] + part[1];
  }
}

void weighted_rows_scalar(const float* w, const float* rows, int64_t ld, int64_t count, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = 0.0f;
  for (int64_t j = 0; j < count; ++j) {
    if (w[j] == 0.0f) continue;
    const float* row = rows + j * ld;
    for (int64_t i = 0; i < n; ++i) out[i] += w[j] * row[i];
  }
}

}  // namespace qnnpy
