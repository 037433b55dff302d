#include <algorithm>

#include "runtime/ops/float_runners.h"

namespace qnnpy {

FloatLayer::FloatLayer(const Graph& g, const Node& n) {
  const Param& w = g.node_param(n, "weight");
  weight_shape_ = w.shape;
  const int64_t channels = w.shape[0], per_channel = num_elements(w.shape) / channels;
  weight_.resize(static_cast<size_t>(num_elements(w.shape)));
  if (w.dtype == DType::Float32) std::copy(w.data<float>(), w.data<float>() + weight_.size(), weight_.begin());
  for (int64_t c = 0; w.dtype == DType::Int8 && c < channels; ++c) {
    const size_t q = w.q.per_channel() ? static_cast<size_t>(c) : 0;
    const float zp = static_cast<float>(w.q.zero_point[q]), scale = w.q.scale[q];
    for (int64_t i = c * per_channel; i < (c + 1) * per_channel; ++i) weight_[i] = (static_cast<float>(w.data<int8_t>()[i]) - zp) * scale;
  }
  bias_.assign(static_cast<size_t>(channels), 0.0f);
  if (n.has_param("bias_float")) {
    const Param& b = g.node_param(n, "bias_float");
    std::copy(b.data<float>(), b.data<float>() + channels, bias_.begin());
  }
}

// Direct convolution, one output plane at a time: y[oc] = bias[oc] + sum over (ic, kh, kw) of
// w * x shifted; the output columns whose input column lies in the padding are skipped.
const char* FloatConv2d::run(const OpArgs& a, int) const {
  const Shape &xs = a.in().shape, &ys = a.out().shape;
  const Node& n = a.node;
  const auto &stride = n.ints_attr("stride"), &pad = n.ints_attr("padding"), &dil = n.ints_attr("dilation");
  const int64_t groups = n.int_attr("groups");
  const int64_t batch = xs[0], ic_total = xs[1], ih = xs[2], iw = xs[3], oc_total = ys[1], oh = ys[2], ow = ys[3];
  const int64_t kh = weight_shape_[2], kw = weight_shape_[3], icg = ic_total / groups, ocg = oc_total / groups;
  const float* x = a.in_buf().f.data();
  std::vector<float>& y = a.out_buf().f;
  y.assign(static_cast<size_t>(num_elements(ys)), 0.0f);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t oc = 0; oc < oc_total; ++oc) {
      float* plane = y.data() + (b * oc_total + oc) * oh * ow;
      std::fill(plane, plane + oh * ow, bias_[oc]);
      const int64_t g = oc / ocg;
      for (int64_t ic = 0; ic < icg; ++ic) {
        const float* xp = x + (b * ic_total + g * icg + ic) * ih * iw;
        for (int64_t r = 0; r < kh; ++r) {
          for (int64_t s = 0; s < kw; ++s) {
            const float wv = weight_[((oc * icg + ic) * kh + r) * kw + s];
            // Output columns j with 0 <= j * stride - pad + s * dil < iw.
            const int64_t shift = s * dil[1] - pad[1];
            const int64_t j0 = std::max<int64_t>(0, (-shift + stride[1] - 1) / stride[1]);
            const int64_t j1 = std::min<int64_t>(ow, (iw - shift + stride[1] - 1) / stride[1]);
            for (int64_t i = 0; i < oh; ++i) {
              const int64_t row = i * stride[0] - pad[0] + r * dil[0];
              if (row < 0 || row >= ih) continue;
              const float* xr = xp + row * iw + shift;
              float* yr = plane + i * ow;
              for (int64_t j = j0; j < j1; ++j) yr[j] += wv * xr[j * stride[1]];
            }
          }
        }
      }
    }
  }
  return "";
}

// y[m, o] = bias[o] + sum over k of x[m, k] * w[o, k].
const char* FloatLinear::run(const OpArgs& a, int) const {
  const int64_t out_features = weight_shape_[0], in_features = weight_shape_[1];
  const int64_t rows = num_elements(a.in().shape) / in_features;
  const float* x = a.in_buf().f.data();
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(rows * out_features));
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t o = 0; o < out_features; ++o) {
      const float* w = weight_.data() + o * in_features;
      const float* xr = x + m * in_features;
      float acc = 0.0f;
      for (int64_t k = 0; k < in_features; ++k) acc += xr[k] * w[k];
      y[m * out_features + o] = acc + bias_[o];
    }
  }
  return "";
}

}  // namespace qnnpy
