// The runner of affine_linear (ops/affine_linear.cpp): the linears of torchao's quantize_ configs,
// float in, float out, on rows of K floats (every axis of the input but the last is a row).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/prepared_op.h"

namespace qnnpy {

// w[c][k] int8, its group g = k / group_size: scale s[c][g], zero point z[c][g]; b[c] the float bias
// (0 without one). fl() is one float32 rounding, rne rounds half to even. From torchao 0.18
// (torchao/quantization/quant_primitives.py: choose_qparams_affine, quantize_affine, dequantize_affine;
// quantize_/workflows/int8/int8_tensor.py, intx/intx_unpacked_to_int8_tensor.py):
//
// activation 1, int8 symmetric per token (Int8Tensor's dynamic linear), exact:
//   amax = max(-min(min_k x, 0), max(max_k x, 0));  s_x = max(fl(amax / 127.5), 2^-23)
//   q[k] = clamp(rne(fl(x[k] * fl(1 / s_x))), -128, 127)
//   acc[c] = sum_k q[k] * w[c][k]   exact int32 (torch._int_mm)
//   y[c] = fl(fl(fl(float(acc[c]) * s_x) * s[c][0]) + b[c])
// activation 2, int8 asymmetric per token (8da4w):
//   lo = min(min_k x, 0), hi = max(max_k x, 0);  s_x = max(fl(fl(hi - lo) / 255), 2^-126)
//   z_x = clamp(-128 - rne(fl(lo / s_x)), -128, 127);  q[k] = clamp(rne(fl(x[k] * fl(1 / s_x))) + z_x, -128, 127)
//   S[c][g] = sum_{k in g} (q[k] - z_x) * (w[c][k] - z[c][g])   exact int32, per group of the row
//   y[c] = fl(fl(sum_g fl(s[c][g] * float(S[c][g]))) * s_x) + b[c]   (the groups summed in order)
//   torchao dequantizes both sides and sums their float products (BLAS): equal to float rounding.
// weight-only:
//   scale_after_dot 0:  y[c] = sum_k x[k] * fl(float(w[c][k] - z[c][g]) * s[c][g]) + b[c]   (F.linear of the dequantized weight)
//                       with a weight_offset o[c][g] (Int4OpaqueTensor): the weight fma(float(w[c][k] - z[c][g]), s[c][g], o[c][g])
//   scale_after_dot 1:  y[c] = fl(fl((sum_k x[k] * float(w[c][k])) * s[c][0]) + b[c])      (Int8Tensor per row, zero points 0)
// The float sums are PyTorch's BLAS's in its order, ours in 16 interleaved partial sums: they agree to
// float rounding, not bit for bit. The integer sums run on the kernel set's u8 x s8 GEMM where it is exact for
// any byte (VNNI, AMX), else on the scalar one (the same integers on every set): the input offset by 128 to make
// it unsigned, as torchao's x86 path does, and 128 * the weight sums taken off. The weight stays int8 (packed for
// the GEMM in the integer paths, whole rows for W8A8, one packed matrix per group of columns for 8da4w, chunk by chunk;
// weights of at most 4 bits with groups of a multiple of 8, two a byte for int4_group_sums, which sums each group's
// integer dot products and scales them in one pass over the weights); weight-only rows are dequantized a row at a time.
// torchao's dequantize_affine of one row of `cols` int8 values, groups of `group` columns: out[i] =
// fl(float(q[i] - zero_point[g]) * scale[g]) with g = i / group (scale, zero_point and offset point at the row's
// groups); with an offset, fma(float(q[i] - zero_point[g]), scale[g], offset[g]) (ops/affine_weight.h).
// Also the lookup of affine_embedding (runtime/ops/embedding_ops.cpp).
void dequantize_affine_row(const int8_t* q, int64_t cols, int64_t group, const float* scale, const int8_t* zero_point,
                           const float* offset, float* out);

class AffineLinear final : public PreparedOp {
 public:
  AffineLinear(const Graph& g, const Node& n, Profile profile);
  const char* run(const OpArgs& a) const override;
  // The params an integer path (activation 1 or 2) copies when the runner is made and never reads again.
  static std::vector<std::string> packed_param_roles(const Node& n);

  // The integer paths' weights, made once per weight (runtime/packed_weights.h) however many runners read it.
  struct Packed {
    // Packed for gemm_u8s8 (activation 1: whole rows, k padded to kq; activation 2: one packed matrix per group,
    // each group padded to kq, chunk by chunk of the columns, see by_chunk) and the sums of each row's (group's)
    // values.
    int64_t kq = 0;
    std::vector<int8_t> gemm;
    std::vector<int32_t> weight_sums;  // activation 1: [c]; activation 2: chunk by chunk
    // Activation 1: s[c][0]. Activation 2: the group scales and zero points, chunk by chunk, as the epilogue
    // reads them.
    std::vector<float> scale;
    std::vector<int32_t> zero_point;
    // Activation 2 on int4 values: the weight packed by pack_int4_groups, the group scales and zero points laid
    // out as int4_group_sums reads them (kernels.h, Int4Groups); no zero points where every one is 0.
    std::vector<uint8_t> int4;
    std::vector<float> int4_scale;
    std::vector<int32_t> int4_zero_point;
    int64_t bytes() const;
  };

 private:
  const char* run_dynamic_int8(const OpArgs& a, const float* x, int64_t rows, float* y) const;
  const char* run_grouped_int8(const OpArgs& a, const float* x, int64_t rows, float* y) const;
  const char* run_grouped_int4(const OpArgs& a, const float* x, int64_t rows, float* y) const;
  void run_float(const OpArgs& a, const float* x, int64_t rows, float* y) const;
  std::shared_ptr<const Packed> pack() const;
  void pack_int4(Packed& p) const;
  // Activation 2: the packed groups, weight sums, scales and zero points reordered chunk by chunk of the columns a
  // worker takes ([chunk][group][the chunk's columns]), so that a worker reads one contiguous run (group by group
  // they lie n * kq bytes apart: a TLB miss each on wide layers, a 32000-row lm_head ran at a third of the rate).
  void by_chunk(Packed& p, int64_t groups, int64_t packed_size) const;
  // The packed bytes of one group of the chunk of columns from c0 (its columns rounded up to whole packed blocks).
  int64_t chunk_bytes(int64_t kq, int64_t c0) const;

  int64_t n_ = 0, k_ = 0, group_ = 0;
  int activation_ = 0;
  bool scale_after_dot_ = false, int4_ = false;
  // The graph's params: read by the float path (activation 0) on every run, by the integer paths only while packing.
  const int8_t* weight_ = nullptr;       // (n, k)
  const float* weight_scale_ = nullptr;  // (n, k / group)
  const int8_t* weight_zero_point_ = nullptr;
  const float* weight_offset_ = nullptr;  // (n, k / group) or null
  std::vector<float> bias_;              // zeros without a bias
  std::shared_ptr<const Packed> packed_;  // the integer paths
};

}  // namespace qnnpy
