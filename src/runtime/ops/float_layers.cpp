#include <algorithm>

#include "runtime/ops/float_runners.h"

namespace qnnpy {
namespace {
// A dot product in 8 independent lanes (element k goes to lane k % 8), the lanes summed in
// order at the end: a fixed summation order that the compiler vectorizes without reassociating.
float dot8(const float* a, const float* b, int64_t n) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) lane[l] += a[k + l] * b[k + l];
  for (int l = 0; k < n; ++k, ++l) lane[l] += a[k] * b[k];
  float sum = 0.0f;
  for (float v : lane) sum += v;
  return sum;
}

}  // namespace

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
  integer_ = IntegerAccumulation::prepare(g, n, bias_);
}

// im2col then one dot product per output: y[oc, p] = bias[oc] + sum over k of w[oc, k] * col[p, k],
// k running over (ic of the group, kh, kw); padding reads as 0.
const char* FloatConv2d::run(const OpArgs& a) const {
  if (integer_) return integer_->run(a, true);
  const Shape &xs = a.in().shape, &ys = a.out().shape;
  const Node& n = a.node;
  const auto &stride = n.ints_attr("stride"), &pad = n.ints_attr("padding"), &dil = n.ints_attr("dilation");
  const int64_t groups = n.int_attr("groups");
  const int64_t batch = xs[0], ic_total = xs[1], ih = xs[2], iw = xs[3], oc_total = ys[1], oh = ys[2], ow = ys[3];
  const int64_t kh = weight_shape_[2], kw = weight_shape_[3], icg = ic_total / groups, ocg = oc_total / groups;
  const int64_t k_size = icg * kh * kw, positions = oh * ow;
  const float* x = a.in_buf().f.data();
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(num_elements(ys)));
  std::vector<float> col(static_cast<size_t>(positions * k_size));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          float* c = col.data() + (i * ow + j) * k_size;
          for (int64_t ic = 0; ic < icg; ++ic) {
            const float* plane = x + (b * ic_total + g * icg + ic) * ih * iw;
            for (int64_t r = 0; r < kh; ++r) {
              const int64_t row = i * stride[0] - pad[0] + r * dil[0];
              for (int64_t s = 0; s < kw; ++s) {
                const int64_t column = j * stride[1] - pad[1] + s * dil[1];
                const bool inside = row >= 0 && row < ih && column >= 0 && column < iw;
                *c++ = inside ? plane[row * iw + column] : 0.0f;
              }
            }
          }
        }
      }
      // Blocks of positions whose im2col rows stay in cache while every output channel reads them.
      constexpr int64_t kBlock = 16;
      for (int64_t p0 = 0; p0 < positions; p0 += kBlock) {
        const int64_t p1 = std::min(positions, p0 + kBlock);
        for (int64_t oc = g * ocg; oc < (g + 1) * ocg; ++oc) {
          const float* w = weight_.data() + oc * k_size;
          float* out = y.data() + (b * oc_total + oc) * positions;
          for (int64_t p = p0; p < p1; ++p) out[p] = dot8(w, col.data() + p * k_size, k_size) + bias_[oc];
        }
      }
    }
  }
  return "";
}

// y[m, o] = bias[o] + sum over k of x[m, k] * w[o, k].
const char* FloatLinear::run(const OpArgs& a) const {
  if (integer_) return integer_->run(a, false);
  const int64_t out_features = weight_shape_[0], in_features = weight_shape_[1];
  const int64_t rows = num_elements(a.in().shape) / in_features;
  const float* x = a.in_buf().f.data();
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(rows * out_features));
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t o = 0; o < out_features; ++o) {
      y[m * out_features + o] = dot8(x + m * in_features, weight_.data() + o * in_features, in_features) + bias_[o];
    }
  }
  return "";
}

}  // namespace qnnpy
