// The storage of one value during a run.
#pragma once

#include <cstdint>
#include <vector>

namespace qnnpy {

struct Buffer {
  std::vector<uint8_t> q;            // 8-bit values; NHWC for rank-4 tensors
  std::vector<float> f;              // float values, logical order
  bool torch_channels_last = false;  // memory format PyTorch would give this tensor
};

}  // namespace qnnpy
