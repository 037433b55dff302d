// PyTorch's quantized layer norm, group norm and instance norm (one kernel for all
// three, both engines: quantized_normalize_kernel in
// aten/src/ATen/native/quantized/cpu/kernels/QuantizedOpKernels.cpp). The input is seen
// in contiguous order as M rows of N values; per row, from the exact integer sums
// S = sum(q) and S2 = sum(q * q) of the raw values:
//   m = fl(float(S) / float(N))                  mean of q, in units of s_in
//   mean = fl(m - float(zp_in))
//   var = max(fma(-m, m, fl(float(S2) / float(N))), 0)
//   r = (float)(double(s_in) / sqrt(double(fl(fl(var * s_in) * s_in)) + eps))
// then per value d = fl(float(q - zp_in) - mean) and
//   layer norm (weight per element):   y = fma(fl(d * r), w[j], b[j])
//   group norm (weight per channel):   y = fma(d, fl(r * w[c]), b[c])
// quantized with fl(1 / s_out): zp_out + rne(fl(y * fl(1 / s_out))), clamped.
// PyTorch's build contracts the variance and the affine step into fmas (measured
// against it: tests/test_static_ops.py); its vector lanes and scalar tail quantize
// alike for every finite y (eps > 0 keeps y finite).
#include <algorithm>
#include <cmath>

#include "runtime/layout.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

struct RowScale {
  float mean, r;  // mean of the row in units of s_in, and s_in / std of the dequantized row
};

RowScale row_scale(const uint8_t* x, int64_t n, bool is_signed, float s_in, int32_t zp_in, double eps) {
  int64_t sum = 0, sum_sq = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t v = is_signed ? static_cast<int8_t>(x[j]) : x[j];
    sum += v;
    sum_sq += v * v;
  }
  const float count = static_cast<float>(n);
  const float m = static_cast<float>(sum) / count;
  const float var = std::max(std::fma(-m, m, static_cast<float>(sum_sq) / count), 0.0f);
  const double r = static_cast<double>(s_in) / std::sqrt(static_cast<double>(var * s_in * s_in) + eps);
  return {m - static_cast<float>(zp_in), static_cast<float>(r)};
}

struct OutQuant {
  float inv_scale;
  int32_t zp, lo, hi;

  uint8_t operator()(float y) const {
    const double q = static_cast<double>(std::nearbyint(y * inv_scale)) + zp;
    // NaN (a constant row with eps 0: 0 * inf) has no integer value; x86's conversion gives
    // INT32_MIN, which the clamp takes to lo, as in PyTorch's vectorized quantize on x86.
    if (std::isnan(q)) return static_cast<uint8_t>(lo);
    return static_cast<uint8_t>(static_cast<int32_t>(std::clamp<double>(q, lo, hi)));
  }
};

// What both runners read from the node: the input in logical order, the affine params, the
// input's quantization and the output quantizer.
struct NormInputs {
  std::vector<uint8_t> x;
  const float* w;
  const float* b;
  bool is_signed;
  float s_in;
  int32_t zp_in;
  double eps;
  OutQuant quantize;

  explicit NormInputs(const OpArgs& a)
      : x(to_logical(a.in_buf().q, a.in().shape)),
        w(a.graph.node_param(a.node, "norm_weight").data<float>()),
        b(a.graph.node_param(a.node, "norm_bias").data<float>()),
        is_signed(a.is_signed()),
        s_in(a.in().q.scale[0]),
        zp_in(a.in().q.zero_point[0]),
        eps(a.node.float_attr("eps")),
        quantize{1.0f / a.out().q.scale[0], a.out().q.zero_point[0], dtype_min(a.out().dtype), dtype_max(a.out().dtype)} {}

  RowScale row(const uint8_t* xr, int64_t n) const { return row_scale(xr, n, is_signed, s_in, zp_in, eps); }
  float centered(uint8_t q, float mean) const {
    const int32_t v = is_signed ? static_cast<int8_t>(q) : q;
    return static_cast<float>(v - zp_in) - mean;
  }
};

}  // namespace

// Rows: the leading axes; each row holds the last `normalized_rank` axes. The output
// is contiguous in PyTorch (the kernel reads a contiguous copy of its input).
void run_quantized_layer_norm(const OpArgs& a) {
  const Shape& shape = a.in().shape;
  const int64_t k = a.node.int_attr("normalized_rank");
  int64_t n = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - k; d < static_cast<int64_t>(shape.size()); ++d) n *= shape[d];
  const NormInputs in(a);
  std::vector<uint8_t> y(in.x.size());
  for (int64_t row = 0; row < static_cast<int64_t>(in.x.size()) / n; ++row) {
    const uint8_t* xr = in.x.data() + row * n;
    const RowScale rs = in.row(xr, n);
    for (int64_t j = 0; j < n; ++j) {
      y[row * n + j] = in.quantize(std::fma(in.centered(xr[j], rs.mean) * rs.r, in.w[j], in.b[j]));
    }
  }
  Buffer& yb = a.out_buf();
  yb.torch_channels_last = false;
  yb.q = to_storage(std::move(y), a.out().shape);
}

// Rows: (batch, group), each of C / G channels of the spatial size; the output keeps
// the input's PyTorch memory format (channels_last stays channels_last).
void run_quantized_group_norm(const OpArgs& a) {
  const Shape& shape = a.in().shape;
  const int64_t batch = shape[0], channels = shape[1], groups = a.node.int_attr("num_groups");
  const int64_t spatial = num_elements(shape) / (batch * channels), per_group = channels / groups;
  const NormInputs in(a);
  const int64_t n = per_group * spatial;
  std::vector<uint8_t> y(in.x.size());
  for (int64_t row = 0; row < batch * groups; ++row) {
    const uint8_t* xr = in.x.data() + row * n;
    const RowScale rs = in.row(xr, n);
    for (int64_t cg = 0; cg < per_group; ++cg) {
      const int64_t c = (row % groups) * per_group + cg;
      const float wr = rs.r * in.w[c];
      for (int64_t p = cg * spatial; p < (cg + 1) * spatial; ++p) {
        y[row * n + p] = in.quantize(std::fma(in.centered(xr[p], rs.mean), wr, in.b[c]));
      }
    }
  }
  Buffer& yb = a.out_buf();
  yb.torch_channels_last = a.in_buf().torch_channels_last;
  yb.q = to_storage(std::move(y), a.out().shape);
}

}  // namespace qnnpy
