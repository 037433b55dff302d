#include "runtime/affine_linear.h"

#include <algorithm>
#include <cmath>

#include "runtime/parallel.h"

namespace qnnpy {
namespace {

constexpr float kFloat32Eps = 1.1920928955078125e-07f;        // torch.finfo(torch.float32).eps
constexpr float kFloat32SmallestNormal = 1.17549435e-38f;     // torch.finfo(torch.float32).smallest_normal
constexpr int64_t kLanes = 16;

// sum_k x[k] * w[k] in kLanes interleaved partial sums, added pairwise at the end: one fixed order.
float dot(const float* x, const float* w, int64_t k) {
  float part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= k; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) part[l] += x[i + l] * w[i + l];
  }
  for (int64_t l = 0; i < k; ++i, ++l) part[l] += x[i] * w[i];
  for (int64_t width = kLanes / 2; width > 0; width /= 2) {
    for (int64_t l = 0; l < width; ++l) part[l] += part[l + width];
  }
  return part[0];
}

void row_min_max(const float* x, int64_t k, float* lo, float* hi) {
  float mn = 0.0f, mx = 0.0f;  // min(min_k x, 0) and max(max_k x, 0)
  for (int64_t i = 0; i < k; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  *lo = mn;
  *hi = mx;
}

// clamp(rne(v), lo, hi) of a float that holds at most a few hundred.
int32_t round_clamp(float v, int32_t lo, int32_t hi) {
  return std::clamp(static_cast<int32_t>(std::nearbyint(v)), lo, hi);
}

}  // namespace

AffineLinear::AffineLinear(const Graph& g, const Node& n, Profile) {
  const Param& w = g.node_param(n, "weight");
  n_ = w.shape[0];
  k_ = w.shape[1];
  group_ = n.int_attr("group_size");
  activation_ = static_cast<int>(n.int_attr("activation"));
  scale_after_dot_ = n.int_attr("scale_after_dot") != 0;
  weight_ = w.data<int8_t>();
  weight_scale_ = g.node_param(n, "weight_scale").data<float>();
  weight_zero_point_ = g.node_param(n, "weight_zero_point").data<int8_t>();
  has_bias_ = n.has_param("bias");
  bias_.assign(static_cast<size_t>(n_), 0.0f);
  if (has_bias_) {
    const float* b = g.node_param(n, "bias").data<float>();
    bias_.assign(b, b + n_);
  }
  if (activation_ == 1) {
    const int64_t kq = (k_ + 3) / 4 * 4;
    std::vector<int8_t> b(static_cast<size_t>(kq * n_), 0);  // k x n, the layout pack_b_u8s8 reads
    offset_correction_.assign(static_cast<size_t>(n_), 0);
    for (int64_t c = 0; c < n_; ++c) {
      for (int64_t i = 0; i < k_; ++i) {
        b[i * n_ + c] = weight_[c * k_ + i];
        offset_correction_[c] += 128 * weight_[c * k_ + i];
      }
    }
    packed_.resize(static_cast<size_t>(packed_b_u8s8_size(kq, n_)));
    pack_b_u8s8(b.data(), kq, n_, packed_.data());
  }
}

const char* AffineLinear::run(const OpArgs& a) const {
  const std::vector<float>& x = a.in_buf().f;
  const int64_t rows = static_cast<int64_t>(x.size()) / k_;
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(rows * n_));
  if (activation_ == 1) return run_dynamic_int8(a, x.data(), rows, y.data());
  if (activation_ == 2) {
    std::vector<float> xd(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data() + r * k_;
      float lo, hi;
      row_min_max(xr, k_, &lo, &hi);
      const float s = std::max((hi - lo) / 255.0f, kFloat32SmallestNormal);
      const int32_t z = std::clamp(-128 - static_cast<int32_t>(std::nearbyint(lo / s)), -128, 127);
      const float inv = 1.0f / s;
      for (int64_t i = 0; i < k_; ++i) {
        const int32_t q = std::clamp(static_cast<int32_t>(std::nearbyint(xr[i] * inv)) + z, -128, 127);
        xd[r * k_ + i] = static_cast<float>(q - z) * s;
      }
    }
    run_float(a, xd.data(), rows, y.data());
  } else {
    run_float(a, x.data(), rows, y.data());
  }
  return "float_dot";
}

const char* AffineLinear::run_dynamic_int8(const OpArgs& a, const float* x, int64_t rows, float* y) const {
  const int64_t kq = (k_ + 3) / 4 * 4;
  std::vector<uint8_t> q(static_cast<size_t>(rows * kq), 0);  // q + 128; the padding multiplies zero weights
  std::vector<float> row_scale(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k_;
    float lo, hi;
    row_min_max(xr, k_, &lo, &hi);
    const float s = std::max(std::max(-lo, hi) / 127.5f, kFloat32Eps);
    const float inv = 1.0f / s;
    row_scale[r] = s;
    for (int64_t i = 0; i < k_; ++i) q[r * kq + i] = static_cast<uint8_t>(round_clamp(xr[i] * inv, -128, 127) + 128);
  }
  std::vector<int32_t> acc(static_cast<size_t>(rows * n_));
  const char* kernel = "gemm_u8s8";
  if (a.k.u8s8_exact) {
    // Row blocks on the workers; each block's GEMM reads the whole packed weight.
    const int64_t block = 16;
    parallel_chunks((rows + block - 1) / block, workers_for(rows * n_ * k_, 1 << 20, a.threads), [&](int64_t b, int) {
      const int64_t r0 = b * block, m = std::min(block, rows - r0);
      a.k.gemm_u8s8(q.data() + r0 * kq, m, kq, packed_.data(), n_, acc.data() + r0 * n_, n_);
    });
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < n_; ++c) acc[r * n_ + c] -= offset_correction_[c];
    }
  } else {
    // Sets whose u8 x s8 GEMM saturates int16 pair sums (AVX2, scalar): plain int32 dot products.
    kernel = "int32_dot";
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < n_; ++c) {
        int32_t sum = 0;
        for (int64_t i = 0; i < k_; ++i) sum += (static_cast<int32_t>(q[r * kq + i]) - 128) * weight_[c * k_ + i];
        acc[r * n_ + c] = sum;
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < n_; ++c) {
      const float v = (static_cast<float>(acc[r * n_ + c]) * row_scale[r]) * weight_scale_[c];
      y[r * n_ + c] = v + bias_[c];
    }
  }
  return kernel;
}

void AffineLinear::run_float(const OpArgs& a, const float* x, int64_t rows, float* y) const {
  const int64_t groups = k_ / group_;
  parallel_chunks(n_, workers_for(rows * n_ * k_, 1 << 20, a.threads), [&](int64_t c, int) {
    std::vector<float> w(static_cast<size_t>(k_));  // row c: its raw values, or dequantized
    const int8_t* wr = weight_ + c * k_;
    for (int64_t gi = 0; gi < groups; ++gi) {
      const float s = weight_scale_[c * groups + gi];
      const int32_t z = weight_zero_point_[c * groups + gi];
      for (int64_t i = gi * group_; i < (gi + 1) * group_; ++i) {
        w[i] = scale_after_dot_ ? static_cast<float>(wr[i]) : static_cast<float>(wr[i] - z) * s;
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      float v = dot(x + r * k_, w.data(), k_);
      if (scale_after_dot_) v *= weight_scale_[c];
      y[r * n_ + c] = v + bias_[c];
    }
  });
}

}  // namespace qnnpy
