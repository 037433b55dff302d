// Conv and linear layers prepared once per module: weights offset by their zero
// points and packed for the GEMM, requantization constants for one profile.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernels.h"
#include "runtime/profile.h"

namespace qnnpy {

struct PreparedLayer {
  // Geometry (conv2d; linear is a 1x1 conv over rows).
  int64_t groups = 1, cin_per_group = 0, cout_per_group = 0, cout = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t k = 0, kp = 0;                    // im2col row length, padded to even
  bool depthwise = false;
  std::vector<int16_t> packed_b;            // groups x packed (kp x cout_per_group), GEMM path
  std::vector<int16_t> depthwise_weights;   // (kh*kw, cout), depthwise path
  // Requantization, per output channel.
  std::vector<int32_t> ibias;
  std::vector<float> fbias, mult;
  int32_t zp = 0, lo = 0, hi = 255;
  int32_t input_zp = 0;

  RequantParams requant(int64_t channel_offset) const {
    return {ibias.data() + channel_offset, fbias.data() + channel_offset, mult.data() + channel_offset, zp, lo, hi};
  }
};

PreparedLayer prepare_layer(const Graph& g, const Node& n, Profile profile);

}  // namespace qnnpy
