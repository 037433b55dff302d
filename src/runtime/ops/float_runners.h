// Runners of the float ops (src/ops/float_ops.cpp): float32 in logical (NCHW) order in
// Buffer::f, float32 out. Sums accumulate in float32, so results may differ from
// PyTorch's float kernels (which sum in another order) in the last bits.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "runtime/ops/op_args.h"
#include "runtime/prepared_op.h"

namespace qnnpy {

// float_ops.cpp
void run_float_add(const OpArgs& a);
void run_float_mul(const OpArgs& a);
void run_float_relu(const OpArgs& a);
void run_float_clamp(const OpArgs& a);
void run_float_hardsigmoid(const OpArgs& a);
void run_float_hardswish(const OpArgs& a);
void run_float_adaptive_avg_pool2d(const OpArgs& a);
void run_float_reshape(const OpArgs& a);

// float_layers.cpp: the int8 weight dequantized once, w = (q - zp[c]) * scale[c]
// (PyTorch's dequantize_per_channel), and the float bias.
class FloatLayer : public PreparedOp {
 public:
  FloatLayer(const Graph& g, const Node& n);

 protected:
  Shape weight_shape_;
  std::vector<float> weight_;
  std::vector<float> bias_;  // zeros without a bias
};

class FloatConv2d final : public FloatLayer {
 public:
  FloatConv2d(const Graph& g, const Node& n, Profile) : FloatLayer(g, n) {}
  const char* run(const OpArgs& a, int threads) const override;
};

class FloatLinear final : public FloatLayer {
 public:
  FloatLinear(const Graph& g, const Node& n, Profile) : FloatLayer(g, n) {}
  const char* run(const OpArgs& a, int threads) const override;
};

}  // namespace qnnpy
