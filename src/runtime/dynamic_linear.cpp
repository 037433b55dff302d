#include "runtime/dynamic_linear.h"

#include <algorithm>
#include <cmath>

#include "runtime/dynamic_qparams.h"

namespace qnnpy {

DynamicLinear::DynamicLinear(const Graph& g, const Node& n, Profile) {
  const Param& w = g.node_param(n, "weight");
  n_ = w.shape[0];
  k_ = w.shape[1];
  kp_ = (k_ + 1) / 2 * 2;
  reduce_range_ = n.int_attr("reduce_range") != 0;
  relu_ = n.int_attr("relu") != 0;
  std::vector<int16_t> b(static_cast<size_t>(k_ * n_));
  const int8_t* wd = w.data<int8_t>();
  for (int64_t c = 0; c < n_; ++c) {
    const size_t qi = w.q.per_channel() ? static_cast<size_t>(c) : 0;
    weight_scale_.push_back(w.q.scale[qi]);
    for (int64_t i = 0; i < k_; ++i) b[i * n_ + c] = static_cast<int16_t>(wd[c * k_ + i] - w.q.zero_point[qi]);
  }
  packed_w_.resize(packed_b_size(k_, n_));
  pack_b(b.data(), k_, n_, packed_w_.data());
  has_bias_ = n.has_param("bias");
  bias_.assign(static_cast<size_t>(n_), 0.0f);
  if (has_bias_) {
    const float* bd = g.node_param(n, "bias").data<float>();
    bias_.assign(bd, bd + n_);
  }
}

const char* DynamicLinear::run(const OpArgs& a) const {
  const std::vector<float>& x = a.in_buf().f;
  const int64_t count = static_cast<int64_t>(x.size());
  const int64_t rows = count / k_;
  float lo, hi;
  find_min_max(x.data(), count, &lo, &hi);
  const DynamicQParams qp = choose_dynamic_qparams(lo, hi, reduce_range_);
  std::vector<uint8_t> q(static_cast<size_t>(count));
  // fbgemm quantizes with 1.f / scale (its TensorQuantizationParams holds a float scale) into uint8.
  a.k.quantize(x.data(), count, 1.0f / qp.scale, qp.zero_point, 0, 255, q.data());
  std::vector<int16_t> rows16(static_cast<size_t>(rows * kp_), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k_; ++i) rows16[r * kp_ + i] = static_cast<int16_t>(q[r * k_ + i] - qp.zero_point);
  }
  std::vector<int32_t> acc(static_cast<size_t>(rows * n_));
  a.k.gemm_s16(rows16.data(), rows, kp_, packed_w_.data(), n_, acc.data(), n_);
  std::vector<float> multiplier(static_cast<size_t>(n_));
  for (int64_t c = 0; c < n_; ++c) multiplier[c] = qp.scale * weight_scale_[c];
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(rows * n_));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < n_; ++c) {
      const float a = static_cast<float>(acc[r * n_ + c]);
      const float v = has_bias_ ? std::fma(a, multiplier[c], bias_[c]) : a * multiplier[c];
      y[r * n_ + c] = relu_ ? std::max(v, 0.0f) : v;
    }
  }
  return "gemm_s16";
}

}  // namespace qnnpy
