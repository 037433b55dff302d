// PyTorch's nearest-neighbour source index (aten/src/ATen/native/UpSample.h, nearest_idx):
// the same size maps to itself, an exact doubling to dst / 2; otherwise
// min(floor(fl(dst * scale)), in - 1), scale = (float)(1 / scale_factor) when the caller
// passed a scale factor (> 0), else fl(in / out).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace qnnpy {

inline int64_t nearest_source_index(int64_t dst, int64_t in, int64_t out, double scale_factor) {
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float scale = scale_factor > 0 ? static_cast<float>(1.0 / scale_factor)
                                       : static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(dst) * scale)), in - 1);
}

}  // namespace qnnpy
