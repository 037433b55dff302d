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
  // The uint8 x int8 GEMM path (conv_runner.cpp), prepared when the input is uint8 and
  // every w - zw fits in int8; empty otherwise (or with QNNPY_GEMM=s16).
  int64_t kq = 0;                           // im2col row length, padded to a multiple of 4
  std::vector<int8_t> packed_b_u8s8;        // groups x packed (kq x cout_per_group)
  // The implicit-GEMM conv (conv_runner.cpp; U8RowRuns in kernels.h): A read in place in the
  // padded input, one run per kernel row of kw * cin bytes rounded up to 4. 0 when the layer
  // does not qualify (groups > 1, dilation along x, pointwise(): rows are input pixels, or a
  // stride along y of more than twice the window's height).
  int64_t run_len = 0;
  // Where rounding each kernel row up to 4 bytes would add more than 1/8 to k (few input channels,
  // as in ResNet's 7x7 conv1: 7 runs of 24 bytes for 147) and the multiply-adds saved repay a copy,
  // a task copies each output row's window columns (kernel rows of one input column side by side:
  // KernelSet::window_columns, conv_runner.cpp) and A is one run of run_len = kq bytes per output
  // pixel, k in the order (kx, ky, channel).
  bool window_columns = false;
  // B for the in-place A: k = kh * run_len with zero weights at the rounding bytes, or with
  // window_columns k = kq in the columns' order; empty when that is packed_b_u8s8 itself (no
  // rounding, or one kernel row).
  std::vector<int8_t> packed_b_runs;
  // Integer Winograd F(2x2, 3x3) (kernels.h): 16 int16 matrices U_e = Gs g Gs^T (cin x cout), each
  // packed by pack_b. Empty unless prepare_winograd found the layer a 3x3 conv of stride 1, dilation
  // 1 and one group over an even number of channels whose sums provably stay within int32.
  std::vector<int16_t> winograd_b;
  // Largest x for which every pair sum x1 b[2p][j] + x2 b[2p+1][j] fits in int16:
  // 32767 / max over p, j of (|b[2p][j]| + |b[2p+1][j]|), at most 255 (depthwise: over the
  // pairs of depthwise_quads).
  int32_t x_bound = 255;
  // Depthwise path: w - zw per tap and channel, packed by pack_depthwise_pairs.
  std::vector<int16_t> depthwise_pairs;
  // The depthwise path over quads of interleaved rows (kernels.h, DepthwiseQuads), prepared for
  // stride 1 along y when the input is uint8 and every w - zw fits in int8 (empty otherwise):
  // quad_shifts output rows share one interleaved z of quad_groups quads of rows (several only for dilation 1),
  // each with its weights packed by pack_depthwise_quads. x_bound covers their pairs.
  std::vector<int8_t> depthwise_quads;
  int64_t quad_groups = 0, quad_shifts = 0;
  // For accumulators of raw x (u8s8 GEMM, depthwise): ibias[c] - zx * sum_k b[k][c],
  // wrapping int32, since sum (x - zx) b = sum x b - zx sum b.
  std::vector<int32_t> ibias_raw_x;
  // Requantization, per output channel.
  std::vector<int32_t> ibias;
  std::vector<float> fbias, mult;                  // int32_bias, fbgemm
  std::vector<int32_t> fixed_multiplier, fixed_shift;  // fixed_point: Q31 M0 and shift
  std::vector<float> w_scale;                      // onednn: the weight scales (mult: 1 / s_y, fbias: the bias)
  float src_scale = 0.0f;                          // onednn: the input scale
  int32_t zp = 0, lo = 0, hi = 255;
  int32_t input_zp = 0;

  bool has_u8s8() const { return !packed_b_u8s8.empty(); }
  // A 1x1 conv of stride 1, no padding, one group: the GEMM rows are the input pixels.
  bool pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && groups == 1; }
  const int8_t* runs_b() const { return packed_b_runs.empty() ? packed_b_u8s8.data() : packed_b_runs.data(); }
  // The runs of the in-place A per output pixel: one per kernel row, or one window of columns.
  int64_t runs() const { return window_columns ? 1 : kh; }
  // With `raw_x`, the accumulators are sums x (w - zw), corrected through the bias.
  RequantParams requant(int64_t channel_offset, bool raw_x = false) const {
    const int32_t* ib = (raw_x ? ibias_raw_x : ibias).data();
    const RequantParams all =
        !fixed_multiplier.empty()
            ? RequantParams{ib, nullptr, nullptr, zp, lo, hi, fixed_multiplier.data(), fixed_shift.data()}
        : !w_scale.empty() ? RequantParams{ib, fbias.data(), mult.data(), zp, lo, hi, nullptr, nullptr, w_scale.data(), src_scale}
                           : RequantParams{ib, fbias.data(), mult.data(), zp, lo, hi};
    return all.columns_from(channel_offset);
  }
};

// The profile a conv / linear / conv_transpose2d node is computed under: `profile` itself, except for the x86
// profiles, which resolve to the oneDNN profile for the layers PyTorch's x86 engine sends to oneDNN (ATen's
// should_use_onednn_quant: symmetric weights, groups <= 100; a transposed conv also per-tensor weights and no
// output padding; never a linear) and to fbgemm for the rest.
Profile layer_profile(Profile profile, const Graph& g, const Node& n);
PreparedLayer prepare_layer(const Graph& g, const Node& n, Profile profile);
// Adds winograd_b to a conv2d layer prepared by prepare_layer, when it qualifies. Only for kernel
// sets that run Winograd (KernelSet::winograd_faster): the 16 matrices take 16/9 of the weights'
// int16 memory.
void prepare_winograd(const Graph& g, const Node& n, PreparedLayer& L);
// A float_conv2d / float_linear node with an int8 weight whose input is the dequantized 8-bit
// tensor `x`: the same packed weights, no requantization (ibias = 0, so the accumulators are the
// exact sums (x - zx)(w - zw)), for the integer-accumulating float path (runtime/ops/float_layers.cpp).
PreparedLayer prepare_float_output_layer(const Graph& g, const Node& n, const Value& x);

}  // namespace qnnpy
