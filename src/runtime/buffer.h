// The storage of one value during a run.
#pragma once

#include <cstdint>
#include <vector>

namespace qnnpy {

struct Buffer {
  std::vector<uint8_t> q;            // 8-bit values; NHWC for rank-4 tensors
  std::vector<float> f;              // float values, logical order
  std::vector<int64_t> idx;          // int64 / int32 / bool values, logical order, widened to int64 (bool as 0 / 1)
  // The memory layout PyTorch would give this tensor: channels_last or contiguous
  // order, and whether it is dense in that order (false for views such as slices).
  bool torch_channels_last = false;
  bool torch_dense = true;
};

}  // namespace qnnpy
