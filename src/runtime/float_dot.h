// A float32 dot product in a fixed order of its own: the float ops that sum products (the weight-only linears of
// torchao models, attention's scores) agree with PyTorch's BLAS to float rounding, not bit for bit.
#pragma once

#include <cstdint>

namespace qnnpy {

// sum_k x[k] * y[k] in `Lanes` interleaved partial sums (product k into sum k % Lanes), the sums then added
// pairwise: one order, which the compiler turns into vector multiply-adds.
template <int64_t Lanes>
float interleaved_dot(const float* x, const float* y, int64_t n) {
  float part[Lanes] = {};
  int64_t i = 0;
  for (; i + Lanes <= n; i += Lanes) {
    for (int64_t l = 0; l < Lanes; ++l) part[l] += x[i + l] * y[i + l];
  }
  for (int64_t l = 0; i < n; ++i, ++l) part[l] += x[i] * y[i];
  for (int64_t width = Lanes / 2; width > 0; width /= 2) {
    for (int64_t l = 0; l < width; ++l) part[l] += part[l + width];
  }
  return part[0];
}

}  // namespace qnnpy
