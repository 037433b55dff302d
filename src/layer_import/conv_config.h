// Decoding of the configuration stored in PyTorch's quantized conv packed
// params (`Conv{1,2,3}dPackedParamsBase.__getstate__()`).
//
// Layout (aten/src/ATen/native/quantized/cpu/conv_serialization.h):
//   version 2: ("2", [config: int16 tensor, weight], [bias])
//   version 3: (3, config: list of int64, [None, weight, bias])
//   config = [spatial_dims, stride x S, padding x S, dilation x S,
//             output_padding x S, groups, flags]
//   flags: bit 0 = transpose (in version 2 the value is 0 or 1); no other bit may be set.
#pragma once

#include <cstdint>
#include <vector>

namespace qnnpy {

struct ConvConfig {
  int spatial_dims = 0;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool transpose = false;
};

// Throws std::invalid_argument describing what is malformed.
ConvConfig decode_conv_config(int version, const std::vector<int64_t>& config);

}  // namespace qnnpy
