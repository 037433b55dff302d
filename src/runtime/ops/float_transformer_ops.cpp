#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/ops/plain_values.h"
#include "runtime/ops/float_transformer_runners.h"

namespace qnnpy {
// Along the axis: m = max(x), e = exp(x - m), y = e * (1 / sum(e)), the order of PyTorch's CPU
// kernel (aten/src/ATen/native/cpu/SoftMaxKernel.cpp, _vec_softmax_lastdim: one reciprocal, then
// products). The sum runs in index order.
void run_float_softmax(const OpArgs& a) {
  const Shape& shape = a.in().shape;
  const auto axis = static_cast<size_t>(a.node.int_attr("axis") + (a.node.int_attr("axis") < 0 ? shape.size() : 0));
  const AxisSplit split = split_at_axis(shape, axis);
  const int64_t outer = split.outer, length = split.length, inner = split.inner;
  const std::vector<float>& x = a.in_buf().f;
  std::vector<float>& y = a.out_buf().f;
  y.resize(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * length * inner + i;
      float m = x[base];
      for (int64_t k = 1; k < length; ++k) m = std::max(m, x[base + k * inner]);
      float sum = 0.0f;
      for (int64_t k = 0; k < length; ++k) {
        y[base + k * inner] = std::exp(x[base + k * inner] - m);
        sum += y[base + k * inner];
      }
      const float reciprocal = 1.0f / sum;
      for (int64_t k = 0; k < length; ++k) y[base + k * inner] *= reciprocal;
    }
  }
}

// Per row of the normalized_rank last axes: mean and biased variance (accumulated in double),
// rstd = 1 / sqrt(var + eps), then y = (x * rstd + (-rstd * mean)) * weight + bias in float32, the
// formula of PyTorch's CPU kernel (aten/src/ATen/native/cpu/layer_norm_kernel.cpp,
// LayerNormKernelImplInternal).
void run_float_layer_norm(const OpArgs& a) {
  const Shape& shape = a.in().shape;
  const int64_t k = a.node.int_attr("normalized_rank");
  int64_t row = 1;
  for (size_t d = shape.size() - static_cast<size_t>(k); d < shape.size(); ++d) row *= shape[d];
  const float* weight = a.graph.node_param(a.node, "norm_weight").data<float>();
  const float* bias = a.graph.node_param(a.node, "norm_bias").data<float>();
  const double eps = a.node.float_attr("eps");
  const std::vector<float>& x = a.in_buf().f;
  std::vector<float>& y = a.out_buf().f;
  y.resize(x.size());
  for (int64_t r = 0; r < num_elements(shape) / row; ++r) {
    const float* in = x.data() + r * row;
    double sum = 0.0, squares = 0.0;
    for (int64_t i = 0; i < row; ++i) sum += in[i];
    const double mean = sum / static_cast<double>(row);
    for (int64_t i = 0; i < row; ++i) squares += (in[i] - mean) * (in[i] - mean);
    const double variance = squares / static_cast<double>(row);
    const auto rstd = static_cast<float>(1.0 / std::sqrt(variance + eps));
    const float shift = -rstd * static_cast<float>(mean);
    float* out = y.data() + r * row;
    for (int64_t i = 0; i < row; ++i) out[i] = (in[i] * rstd + shift) * weight[i] + bias[i];
  }
}

// PyTorch's GELU (aten/src/ATen/native/cpu/Activation.cpp, GeluKernelImpl): approximate "none":
// x * 0.5 * (1 + erf(x / sqrt(2))); "tanh": 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
void run_float_gelu(const OpArgs& a) {
  if (a.node.int_attr("approximate") == 0) {
    const auto inv_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
    float_unary(a, [=](float x) { return x * 0.5f * (1.0f + std::erf(x * inv_sqrt2)); });
  } else {
    const auto beta = static_cast<float>(std::sqrt(2.0 / M_PI));
    const float kappa = 0.044715f;
    float_unary(a, [=](float x) { return 0.5f * x * (1.0f + std::tanh(beta * (x + kappa * x * x * x))); });
  }
}

// out[b, m, n] = sum over k in index order of x[b', m, k] * y[b'', k, n], b' and b'' the batch
// indices of the inputs broadcast to the output's batch axes (torch.matmul). Each output starts at
// 0 and adds its products k by k; the loop runs over n innermost (rows of y read in order, the
// adds independent across n), which leaves every output's order of adds as it is.
void run_float_matmul(const OpArgs& a) {
  const Shape &xs = a.in(0).shape, &ys = a.in(1).shape, &out_shape = a.out().shape;
  const int64_t m_size = xs[xs.size() - 2], k_size = xs.back(), n_size = ys.back();
  const Shape batch(out_shape.begin(), out_shape.end() - 2);
  const std::vector<float>&x = a.in_buf(0).f, &y = a.in_buf(1).f;
  std::vector<float>& out = a.out_buf().f;
  out.resize(static_cast<size_t>(a.out_count()));
  const Shape x_batch(xs.begin(), xs.end() - 2), y_batch(ys.begin(), ys.end() - 2);
  const Shape* const batches[2] = {&x_batch, &y_batch};
  for_each_broadcast(batch, batches, [&](int64_t b, const int64_t* o) {
                       const int64_t bx = o[0], by = o[1];
                       const float* lhs = x.data() + bx * m_size * k_size;
                       const float* rhs = y.data() + by * k_size * n_size;
                       float* dst = out.data() + b * m_size * n_size;
                       for (int64_t m = 0; m < m_size; ++m) {
                         float* row = dst + m * n_size;
                         std::fill(row, row + n_size, 0.0f);
                         for (int64_t k = 0; k < k_size; ++k) {
                           const float a = lhs[m * k_size + k];
                           const float* b = rhs + k * n_size;
                           for (int64_t n = 0; n < n_size; ++n) row[n] += a * b[n];
                         }
                       }
                     });
}

}  // namespace qnnpy
