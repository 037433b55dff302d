#include <algorithm>
#include <cmath>

#include "runtime/ops/plain_values.h"
#include "runtime/ops/float_runners.h"

namespace qnnpy {

void run_float_clamp(const OpArgs& a) {
  const float lo = static_cast<float>(a.node.float_attr("min")), hi = static_cast<float>(a.node.float_attr("max"));
  float_unary(a, [=](float x) { return std::min(std::max(x, lo), hi); });
}


// PyTorch's adaptive average pooling windows: [floor(o * in / out), ceil((o + 1) * in / out)).
void run_float_adaptive_avg_pool2d(const OpArgs& a) {
  const Shape &xs = a.in().shape, &ys = a.out().shape;
  const float* x = a.in_buf().f.data();
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(num_elements(ys)));
  const int64_t ih = xs[2], iw = xs[3], oh = ys[2], ow = ys[3];
  for (int64_t p = 0; p < xs[0] * xs[1]; ++p) {
    const float* plane = x + p * ih * iw;
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t r0 = i * ih / oh, r1 = ((i + 1) * ih + oh - 1) / oh;
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t c0 = j * iw / ow, c1 = ((j + 1) * iw + ow - 1) / ow;
        float sum = 0.0f;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) sum += plane[r * iw + c];
        y[(p * oh + i) * ow + j] = sum / static_cast<float>((r1 - r0) * (c1 - c0));
      }
    }
  }
}

}  // namespace qnnpy
