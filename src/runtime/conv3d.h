// conv3d, run as one conv2d over every output frame at once: output frame z of input (N, C, D, H, W) sums, over
// the kernel's depth taps t, the 2-D convolution of input frame z * stride + t * dilation - padding with the
// weight's tap t. The runner gathers those kd frames of each output frame side by side as the channels of one
// conv2d input ((N * Do, C * kd, H, W); frames in the depth padding hold the zero point, which adds
// (zx - zx) * w = 0), and the conv2d's weight holds the taps the same way (O, C / groups * kd, kh, kw), tap-major
// within each group. Its int32 sums are the 3-D convolution's exactly, requantized once as conv2d requantizes
// (PyTorch's quantized conv3d shares its packed-weight and requantization code with conv2d:
// aten/src/ATen/native/quantized/cpu/qconv.cpp, PackedConvWeight<kSpatialDim>).
#pragma once

#include "ir/graph.h"
#include "runtime/ops/op_args.h"
#include "runtime/prepared_layer.h"
#include "runtime/prepared_op.h"

namespace qnnpy {

class Conv3dRunner final : public PreparedOp {
 public:
  Conv3dRunner(const Graph& g, const Node& n, Profile profile);
  // Returns the conv kernel that ran (see run_weighted).
  const char* run(const OpArgs& a) const override;

 private:
  Graph conv_;      // the gathered frames -> conv2d with the taps as channels
  int input_ = -1;  // the conv2d's quantized input value in conv_
  PreparedLayer layer_;
  int64_t taps_ = 1, stride_d_ = 1, padding_d_ = 0, dilation_d_ = 1, groups_ = 1;
};

}  // namespace qnnpy
