// PyTorch's quantized softmax (qsoftmax in aten/src/ATen/native/quantized/cpu/qsoftmax.cpp)
// along one axis. Two kernels, chosen as PyTorch chooses them:
//  - QNNPACK's integer softargmax, under the qnnpack engine (profiles that follow the
//    int32_bias rules) for a uint8 input with output qparams exactly (1/256, 0)
//    (qnnpack/src/softargmax.c, u8lut32norm.c, operator-run.c);
//  - otherwise dequantize -> at::softmax in float -> quantize_per_tensor, following the
//    float kernels of aten/src/ATen/native/cpu/SoftMaxKernel.cpp (see float_softmax).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/layout.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

float float_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Vectorized<float>::exp_u20 (AVX-512, vec512_float.h): exp(x) = 2^n exp(r) with
// n = floor(fma(x, log2(e), 0.5)), r = x - n ln2 (fnmadd) and a degree-5 polynomial in
// Horner form (fmas), scaled by 2^(n-1) and then by 2; 0 below ln(FLT_MIN).
float exp_u20(float x) {
  const float ln_min = float_bits(0xc2aeac50u), ln_max = float_bits(0x42b17218u);
  const float src = std::max(std::min(x, ln_max), ln_min);
  const float fx = std::floor(std::fma(src, float_bits(0x3fb8aa3bu), 0.5f));
  const float r = std::fma(-fx, float_bits(0x3f317218u), src);
  float p = std::fma(r, 0.00828929059f, 0.0418978221f);
  p = std::fma(r, p, 0.166676521f);
  p = std::fma(r, p, 0.499991506f);
  p = std::fma(r, p, 0.999999701f);
  p = std::fma(r, p, 1.0f);
  const auto n = static_cast<int32_t>(std::nearbyint(fx - 1.0f));
  const float two_n = x < ln_min ? 0.0f : float_bits(static_cast<uint32_t>(n + 127) << 23);
  return (p * two_n) * 2.0f;
}

// vec::reduce_all with + over 16-lane vectors (functional_base.h): lane sums over full
// vectors, the remainder added into its first lanes, then lanes combined at distances
// 8, 4, 2, 1; fewer than 16 values are added in order.
float reduce_all_sum(const float* v, int64_t n) {
  constexpr int64_t kLanes = 16;
  if (n < kLanes) {
    float acc = v[0];
    for (int64_t i = 1; i < n; ++i) acc += v[i];
    return acc;
  }
  float lanes[kLanes];
  std::copy(v, v + kLanes, lanes);
  const int64_t full = n - n % kLanes;
  for (int64_t d = kLanes; d < full; d += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += v[d + l];
  for (int64_t l = 0; l < n - full; ++l) lanes[l] += v[full + l];
  for (int64_t step = kLanes / 2; step >= 1; step /= 2) {
    float next[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) next[l] = lanes[l] + lanes[l ^ step];
    std::copy(next, next + kLanes, lanes);
  }
  return lanes[0];
}

// The input as (outer, dim, inner) in logical order.
struct Rows {
  int64_t outer = 1, dim = 1, inner = 1;
};

Rows rows_of(const Shape& s, int64_t axis) {
  Rows r;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    (d < axis ? r.outer : d == axis ? r.dim : r.inner) *= s[d];
  }
  return r;
}

// Float path. Last axis (_vec_softmax_lastdim): m = max, e = exp_u20(x - m), sum by
// reduce_all, y = e * fl(1 / sum). Other axes (_vec_softmax): per position, e =
// exp(x - m) (SLEEF's expf there, the C library's here: measured in
// tests/test_static_ops.py), sum in axis order, y = e / sum. Both on a contiguous copy
// of the input. x = fl(s * float(q - zp))
// (at::dequantize); y is quantized with quantize_per_tensor: zp + rne(fl(y * fl(1 / s_out))).
std::vector<uint8_t> float_softmax(const std::vector<uint8_t>& q, const Rows& r, bool is_signed, float s_in,
                                   int32_t zp_in, const Value& out) {
  std::vector<float> x(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    const int32_t v = is_signed ? static_cast<int8_t>(q[i]) : q[i];
    x[i] = s_in * static_cast<float>(v - zp_in);
  }
  const float inv = 1.0f / out.q.scale[0];
  const int32_t zp = out.q.zero_point[0], lo = dtype_min(out.dtype), hi = dtype_max(out.dtype);
  std::vector<uint8_t> y(q.size());
  std::vector<float> e(static_cast<size_t>(r.dim));
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t i = 0; i < r.inner; ++i) {
      const int64_t base = o * r.dim * r.inner + i;
      float m = x[base];
      for (int64_t d = 1; d < r.dim; ++d) m = std::max(m, x[base + d * r.inner]);
      float sum = 0.0f;
      for (int64_t d = 0; d < r.dim; ++d) {
        const float t = x[base + d * r.inner] - m;
        e[d] = r.inner == 1 ? exp_u20(t) : std::exp(t);
        if (r.inner != 1) sum += e[d];
      }
      if (r.inner == 1) sum = 1.0f / reduce_all_sum(e.data(), r.dim);
      for (int64_t d = 0; d < r.dim; ++d) {
        const float v = r.inner == 1 ? e[d] * sum : e[d] / sum;
        const double t = static_cast<double>(std::nearbyint(v * inv)) + zp;
        y[base + d * r.inner] = static_cast<uint8_t>(static_cast<int32_t>(std::clamp<double>(t, lo, hi)));
      }
    }
  }
  return y;
}

// QNNPACK: t[i] = lrint(qscale * exp(double(i - 255) * double(s_in))) with qscale =
// min(UINT32_MAX / n, 2^23 - 1) in double; per row, with m = max(q), every value
// reads t[q + 255 - m]; sum in uint32; y = min(255, ((t << 8) + sum / 2) / sum) in uint32.
std::vector<uint8_t> qnnpack_softmax(const std::vector<uint8_t>& q, const Rows& r, float s_in) {
  const double qscale = std::fmin(static_cast<double>(UINT32_MAX) / static_cast<double>(r.dim), 8388607.0);
  uint32_t table[256];
  for (int32_t i = 0; i < 256; ++i) {
    table[i] = static_cast<uint32_t>(std::lrint(qscale * std::exp(static_cast<double>(i - 255) * static_cast<double>(s_in))));
  }
  std::vector<uint8_t> y(q.size());
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t i = 0; i < r.inner; ++i) {
      const int64_t base = o * r.dim * r.inner + i;
      uint8_t m = 0;
      for (int64_t d = 0; d < r.dim; ++d) m = std::max(m, q[base + d * r.inner]);
      const uint32_t* t = table + (255 - m);
      uint32_t sum = 0;
      for (int64_t d = 0; d < r.dim; ++d) sum += t[q[base + d * r.inner]];
      for (int64_t d = 0; d < r.dim; ++d) {
        const uint32_t v = ((t[q[base + d * r.inner]] << 8) + (sum >> 1)) / sum;
        y[base + d * r.inner] = static_cast<uint8_t>(std::min<uint32_t>(v, 255));
      }
    }
  }
  return y;
}

}  // namespace

void run_quantized_softmax(const OpArgs& a) {
  const Value &xv = a.in(), &out = a.out();
  const int64_t rank = static_cast<int64_t>(xv.shape.size());
  const int64_t axis = (a.node.int_attr("axis") + rank) % rank;
  const Rows r = rows_of(xv.shape, axis);
  const std::vector<uint8_t> x = to_logical(a.in_buf().q, xv.shape);
  const bool channels_last = a.in_buf().torch_channels_last;
  const bool qnnpack = follows_int32_bias_rules(a.profile) && xv.dtype == DType::UInt8 &&
                       out.q.scale[0] == 0x1.0p-8f && out.q.zero_point[0] == 0;
  Buffer& y = a.out_buf();
  if (qnnpack) {
    y.q = to_storage(qnnpack_softmax(x, r, xv.q.scale[0]), out.shape);
    // The axis with unit stride keeps the input's layout; otherwise the output is
    // contiguous, or a permuted view of a contiguous tensor (not dense in either order).
    const bool unit_stride = channels_last && rank == 4 ? axis == 1 : axis == rank - 1;
    y.torch_channels_last = unit_stride && channels_last;
    y.torch_dense = unit_stride || axis == rank - 1;
  } else {
    // at::softmax reads a contiguous copy and writes a contiguous output.
    y.q = to_storage(float_softmax(x, r, a.is_signed(), xv.q.scale[0], xv.q.zero_point[0], out), out.shape);
    y.torch_channels_last = false;
    y.torch_dense = true;
  }
}

}  // namespace qnnpy
