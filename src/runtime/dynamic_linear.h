// The runner of dynamic_linear: PyTorch's quantized::linear_dynamic on the fbgemm
// engine (aten/src/ATen/native/quantized/cpu/qlinear_dynamic.cpp), float in, float out.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/prepared_op.h"

namespace qnnpy {

// Per call, over the whole input tensor x (rows of k floats):
//   (s_x, z_x) = choose_dynamic_qparams(min(x), max(x), reduce_range)   (runtime/dynamic_qparams.h)
//   q = clamp(cvtps(fl(x * fl(1 / s_x))) + z_x, 0, 255)                 (fbgemm QuantizeAvx2)
//   acc[c] = sum_k (q_k - z_x)(w[c][k] - z_w[c])                        exact int32 (int16 GEMM)
//   y[c] = fma(float(acc[c]), fl(s_x * s_w[c]), bias[c])  (no bias: fl(float(acc[c]) * fl(s_x * s_w[c])))
//   relu: max(y, 0)
// The last line is fbgemm's requantizeForFloatAvx2 (QuantUtilsAvx2.cc), which x86 machines with
// AVX2 run: its source multiplies then adds, and PyTorch's build compiles the pair into one fused
// multiply-add (measured: tests/test_dynamic_linear.py fails with a separate rounding). Its generic
// twin (OutputProcessing-inl.h), for CPUs without AVX2, multiplies by s_x and s_w one after the other.
class DynamicLinear final : public PreparedOp {
 public:
  DynamicLinear(const Graph& g, const Node& n, Profile profile);
  const char* run(const OpArgs& a) const override;

 private:
  int64_t k_ = 0, kp_ = 0, n_ = 0;
  bool reduce_range_ = false, relu_ = false;
  std::vector<int16_t> packed_w_;  // (w - z_w) as k x n, packed by pack_b
  std::vector<float> weight_scale_;  // one per output channel
  std::vector<float> bias_;          // the float bias, added only when the layer has one
  bool has_bias_ = false;
};

}  // namespace qnnpy
