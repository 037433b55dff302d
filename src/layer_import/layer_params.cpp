#include "layer_import/layer_params.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace qnnpy {

float bias_scale(float input_scale, float weight_scale) {
  return static_cast<float>(static_cast<double>(input_scale) * static_cast<double>(weight_scale));
}

int32_t quantize_bias(float bias, float scale, bool* saturated) {
  float inv_scale = 1.0f / scale;
  double q = std::nearbyint(bias * inv_scale);  // float product, then ties-to-even
  *saturated = q < INT32_MIN || q > INT32_MAX;
  if (q < INT32_MIN) return INT32_MIN;
  if (q > INT32_MAX) return INT32_MAX;
  return static_cast<int32_t>(q);
}

namespace {

void check_weight(const std::string& prefix, const WeightView& w) {
  auto fail = [&](const std::string& msg) { throw std::invalid_argument(prefix + ": weight " + msg); };
  if (w.shape.empty() || w.shape[0] < 1) fail("has no output channels");
  size_t channels = static_cast<size_t>(w.shape[0]);
  const QParams& q = w.q;
  if (q.scale.size() != q.zero_point.size()) fail("scale and zero point counts differ");
  if (q.per_channel()) {
    if (q.axis != 0) fail("is quantized per channel along axis " + std::to_string(q.axis) + "; only axis 0 is supported");
    if (q.scale.size() != channels) {
      fail("has " + std::to_string(q.scale.size()) + " per-channel scales for " + std::to_string(channels) + " channels");
    }
  } else if (q.scale.size() != 1) {
    fail("per-tensor quantization needs one scale");
  }
  for (size_t c = 0; c < q.scale.size(); ++c) {
    if (!(q.scale[c] > 0.0f) || !std::isfinite(q.scale[c])) fail("scale " + std::to_string(q.scale[c]) + " is not a positive number");
    if (q.zero_point[c] < -128 || q.zero_point[c] > 127) fail("zero point " + std::to_string(q.zero_point[c]) + " is outside int8");
  }
}

template <class T>
Param make_param(const std::string& name, DType dtype, const Shape& shape, const T* data) {
  Param p;
  p.name = name;
  p.dtype = dtype;
  p.shape = shape;
  p.bytes.resize(static_cast<size_t>(num_elements(shape)) * sizeof(T));
  std::memcpy(p.bytes.data(), data, p.bytes.size());
  return p;
}

}  // namespace

LayerParams add_layer_params(Graph& g, const std::string& prefix, const WeightView& w, const float* bias,
                             float input_scale, int64_t out_channels) {
  check_weight(prefix, w);
  LayerParams out;
  Param weight = make_param(prefix + "_weight", DType::Int8, w.shape, w.data);
  weight.q = w.q;
  out.weight = g.add_param(std::move(weight));
  if (bias == nullptr) return out;

  const int64_t channels = out_channels < 0 ? w.shape[0] : out_channels;
  if (w.q.per_channel() && channels != w.shape[0]) throw std::invalid_argument(prefix + ": per-channel weights need one bias per weight row");
  for (int64_t c = 0; c < channels; ++c) {
    // nearbyint of a NaN would reach an int32 cast (undefined behaviour).
    if (!std::isfinite(bias[c])) throw std::invalid_argument(prefix + ": bias[" + std::to_string(c) + "] = " + std::to_string(bias[c]) + " is not finite");
  }
  std::vector<int32_t> qbias(channels);
  QParams bq;
  bq.axis = w.q.per_channel() ? 0 : -1;
  for (int64_t c = 0; c < channels; ++c) {
    float s = bias_scale(input_scale, w.q.scale[w.q.per_channel() ? c : 0]);
    // quantize_bias multiplies by 1 / s: a product that rounds to 0 (or below 1 / FLT_MAX) gives an
    // infinite reciprocal, and a zero bias times it a NaN, which would reach an int32 cast.
    if (!(s > 0.0f) || !std::isfinite(1.0f / s)) {
      throw std::invalid_argument(prefix + ": bias scale input_scale * weight_scale = " + std::to_string(input_scale) +
                                  " * " + std::to_string(w.q.scale[w.q.per_channel() ? c : 0]) +
                                  " is too small to quantize the bias with (its reciprocal is not finite)");
    }
    if (c == 0 || w.q.per_channel()) {
      bq.scale.push_back(s);
      bq.zero_point.push_back(0);
    }
    bool saturated = false;
    qbias[c] = quantize_bias(bias[c], s, &saturated);
    out.bias_saturated += saturated;
  }
  Param b = make_param(prefix + "_bias", DType::Int32, {channels}, qbias.data());
  b.q = bq;
  out.bias = g.add_param(std::move(b));

  Param bf = make_param(prefix + "_bias_float", DType::Float32, {channels}, bias);
  bf.exported = false;
  out.bias_float = g.add_param(std::move(bf));
  return out;
}

std::map<std::string, int> add_batch_norm_params(Graph& g, const std::string& prefix, int64_t channels,
                                                 const float* weight, const float* bias, const float* mean,
                                                 const float* var) {
  std::map<std::string, int> roles;
  const std::pair<const char*, const float*> parts[] = {
      {"weight", weight}, {"bias", bias}, {"running_mean", mean}, {"running_var", var}};
  for (const auto& [suffix, data] : parts) {
    roles[std::string("bn_") + suffix] = g.add_param(make_param(g.unique_name(prefix + "_" + suffix), DType::Float32,
                                                                Shape{channels}, data));
  }
  return roles;
}

}  // namespace qnnpy
