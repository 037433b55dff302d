// Runners of the float ops (src/ops/float_ops.cpp): float32 in logical (NCHW) order in
// Buffer::f, float32 out. Sums accumulate in float32, so results may differ from
// PyTorch's float kernels (which sum in another order) in the last bits.
#pragma once

#include <memory>
#include <vector>

#include "ir/graph.h"
#include "runtime/ops/op_args.h"
#include "runtime/prepared_layer.h"
#include "runtime/prepared_op.h"

namespace qnnpy {

// float_ops.cpp
void run_float_clamp(const OpArgs& a);
void run_float_adaptive_avg_pool2d(const OpArgs& a);

// float_layers.cpp: the int8 weight dequantized once, w = (q - zp[c]) * scale[c]
// (PyTorch's dequantize_per_channel), and the float bias.
//
// Integer accumulation (integer_float_layers.cpp): when the node has its second input, the
// 8-bit tensor x its first input was dequantized from (an int8 weight; ops/float_ops.cpp), and
// the environment variable QNNPY_FLOAT_LAYERS is not "float", the layer runs on x itself with the integer GEMM /
// depthwise kernels: acc = sum (x - zx)(w - zw) exactly in int32, then
// y = fl(fl(float(acc) * fl(s_x * s_w[c])) + bias[c]). PT2E's float conv sums the float
// products in float32 instead, so the two differ in the last bits (docs/pt2e.md measures it).
class IntegerAccumulation {
 public:
  // Null when the layer does not qualify or QNNPY_FLOAT_LAYERS=float.
  static std::unique_ptr<IntegerAccumulation> prepare(const Graph& g, const Node& n, const std::vector<float>& bias);
  IntegerAccumulation(const Graph& g, const Node& n, const std::vector<float>& bias);
  const char* run(const OpArgs& a, bool spatial) const;

 private:
  Node node_;  // the layer's node reading the 8-bit tensor in place of its dequantized values
  PreparedLayer layer_;
  std::vector<float> scale_, bias_;
};

class FloatLayer : public PreparedOp {
 public:
  FloatLayer(const Graph& g, const Node& n);

 protected:
  Shape weight_shape_;
  std::vector<float> weight_;
  std::vector<float> bias_;  // zeros without a bias
  std::unique_ptr<IntegerAccumulation> integer_;
};

class FloatConv2d final : public FloatLayer {
 public:
  FloatConv2d(const Graph& g, const Node& n, Profile) : FloatLayer(g, n) {}
  const char* run(const OpArgs& a) const override;
};

class FloatLinear final : public FloatLayer {
 public:
  FloatLinear(const Graph& g, const Node& n, Profile) : FloatLayer(g, n) {}
  const char* run(const OpArgs& a) const override;
};

}  // namespace qnnpy
