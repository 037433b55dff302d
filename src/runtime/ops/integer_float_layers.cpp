// The integer-accumulating path of float_conv2d / float_linear (float_runners.h): a PT2E
// float-output layer (dequantize -> conv / linear with an int8 weight -> float, no quantize
// after) computed by the integer kernels of conv2d / linear on the 8-bit input.
#include <cstdlib>
#include <cstring>

#include "runtime/conv_runner.h"
#include "runtime/ops/float_runners.h"

namespace qnnpy {
namespace {

bool integer_accumulation_enabled() {
  const char* env = std::getenv("QNNPY_FLOAT_LAYERS");
  return !(env && std::strcmp(env, "float") == 0);
}

}  // namespace

std::unique_ptr<IntegerAccumulation> IntegerAccumulation::prepare(const Graph& g, const Node& n,
                                                                 const std::vector<float>& bias) {
  if (n.inputs.size() < 2 || !integer_accumulation_enabled()) return nullptr;
  return std::make_unique<IntegerAccumulation>(g, n, bias);
}

IntegerAccumulation::IntegerAccumulation(const Graph& g, const Node& n, const std::vector<float>& bias)
    : node_(n), bias_(bias) {
  node_.inputs = {n.inputs.at(1)};  // the 8-bit source (ops/float_ops.cpp checked it)
  const Value& x = g.value(node_.inputs[0]);
  layer_ = prepare_float_output_layer(g, node_, x);
  const Param& w = g.node_param(n, "weight");
  scale_.resize(static_cast<size_t>(layer_.cout));
  // PyTorch's dequantized product of one term is fl(s_x (x - zx)) * fl(s_w (w - zw)); scaling the
  // exact sum once by fl(s_x * s_w) is the integer kernels' counterpart (fbgemm's act_times_w_scale).
  for (int64_t c = 0; c < layer_.cout; ++c) scale_[c] = x.q.scale[0] * w.q.scale[w.q.per_channel() ? c : 0];
}

const char* IntegerAccumulation::run(const OpArgs& a, bool spatial) const {
  const FloatOutput to_float{scale_.data(), bias_.data()};
  return run_weighted(OpArgs{a.graph, node_, a.values, a.k, a.profile, a.threads}, layer_, spatial, &to_float);
}

}  // namespace qnnpy
