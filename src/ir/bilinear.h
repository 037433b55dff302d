// PyTorch's bilinear source positions (aten/src/ATen/native/UpSample.h, area_pixel_compute_scale and
// area_pixel_compute_source_index): with align_corners the source of dst is scale * dst, scale =
// (in - 1) / (out - 1); otherwise max(scale * (dst + 0.5) - 0.5, 0), scale = (float)(1 / scale_factor)
// when the caller passed a scale factor (> 0), else fl(in / out). Each output position takes its
// two source indices i0 <= i1 (clamped to the input) and the weight w1 of the second.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace qnnpy {

struct BilinearTap {
  int64_t i0, i1;
  float w1;
};

inline std::vector<BilinearTap> bilinear_taps(int64_t in, int64_t out, bool align_corners, double scale_factor) {
  std::vector<BilinearTap> taps(static_cast<size_t>(out));
  float scale;
  if (align_corners) {
    scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  } else {
    scale = scale_factor > 0 ? static_cast<float>(1.0 / scale_factor) : static_cast<float>(in) / static_cast<float>(out);
  }
  for (int64_t d = 0; d < out; ++d) {
    const float src = align_corners ? scale * static_cast<float>(d)
                                    : std::max(scale * (static_cast<float>(d) + 0.5f) - 0.5f, 0.0f);
    const auto i0 = std::min(static_cast<int64_t>(src), in - 1);
    taps[d] = {i0, i0 + (i0 < in - 1 ? 1 : 0), src - static_cast<float>(i0)};
  }
  return taps;
}

}  // namespace qnnpy
