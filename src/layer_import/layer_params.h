// Builds the integer params of a conv / linear layer: the int8 weight as it
// is, and the int32 bias quantized with scale s_in * s_w[c].
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace qnnpy {

// A borrowed view of a quantized weight (the numpy buffer of `int_repr()`).
struct WeightView {
  const int8_t* data = nullptr;
  Shape shape;              // OIHW for conv, (out, in) for linear
  QParams q;                // per-tensor, or per-channel along axis 0
};

struct LayerParams {
  int weight = -1;
  int bias = -1;            // -1 when the layer has no bias
  int bias_float = -1;      // runtime-only copy of PyTorch's float bias
  int64_t bias_saturated = 0;
};

// Scale of the int32 bias of output channel c: float(double(s_in) * double(s_w[c])),
// the product PyTorch's qnnpack path forms in double before quantizing.
float bias_scale(float input_scale, float weight_scale);

// q = nearbyint(bias * (1.0f / scale)) in float, round half to even, saturated
// to int32 (PyTorch's quantize_val for qint32). Sets *saturated when clamped.
int32_t quantize_bias(float bias, float scale, bool* saturated);

// Adds `<prefix>_weight`, and with a bias `<prefix>_bias` and `<prefix>_bias_float`.
// `bias` may be null; otherwise it holds `out_channels` floats (default: shape[0];
// a transposed conv's weight is (in, out / groups, kh, kw) and per-tensor).
LayerParams add_layer_params(Graph& g, const std::string& prefix, const WeightView& w, const float* bias,
                             float input_scale, int64_t out_channels = -1);

// Adds the float32 per-channel params of a batch norm (exported: the Relax
// function takes them as R.nn.batch_norm's gamma, beta, mean and variance).
std::map<std::string, int> add_batch_norm_params(Graph& g, const std::string& prefix, int64_t channels,
                                                 const float* weight, const float* bias, const float* mean,
                                                 const float* var);

}  // namespace qnnpy
