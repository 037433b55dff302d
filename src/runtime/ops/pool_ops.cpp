#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/rounding.h"
#include "runtime/layout.h"
#include "runtime/ops/aten_sum.h"
#include "runtime/ops/float_spatial_runners.h"
#include "runtime/ops/runners.h"
#include "runtime/parallel.h"

namespace qnnpy {

namespace {

// pool_shape with the node's window: kernel, stride, padding, and dilation where the op has one.
Pool2dShape window_shape(const OpArgs& a) {
  Pool2dShape s = pool_shape(a);
  const Node& n = a.node;
  const auto &k = n.ints_attr("kernel"), &st = n.ints_attr("stride"), &pd = n.ints_attr("padding");
  s.kh = k[0], s.kw = k[1], s.sh = st[0], s.sw = st[1], s.ph = pd[0], s.pw = pd[1];
  if (n.ints.count("dilation")) s.dh = n.ints_attr("dilation")[0], s.dw = n.ints_attr("dilation")[1];
  return s;
}

// The NHWC input of s padded by s.ph rows and s.pw columns on each side with copies of the nearest
// image pixel: (n, h + 2 ph, w + 2 pw, c).
std::vector<uint8_t> pad_with_edges(const uint8_t* x, const Pool2dShape& s) {
  const int64_t hp = s.h + 2 * s.ph, wp = s.w + 2 * s.pw;
  std::vector<uint8_t> padded(static_cast<size_t>(s.n * hp * wp * s.c));
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t py = 0; py < hp; ++py) {
      const int64_t iy = std::clamp<int64_t>(py - s.ph, 0, s.h - 1);
      for (int64_t px = 0; px < wp; ++px) {
        const int64_t ix = std::clamp<int64_t>(px - s.pw, 0, s.w - 1);
        std::copy_n(x + ((b * s.h + iy) * s.w + ix) * s.c, s.c, padded.data() + ((b * hp + py) * wp + px) * s.c);
      }
    }
  return padded;
}

// Whether PyTorch computes this adaptive_avg_pool2d / mean / avg_pool2d as dequantize -> float mean
// -> quantize (the node's float_mean flag, set for PT2E islands: ops/pool.cpp).
bool float_mean(const Node& n) { return n.ints.count("float_mean") && n.int_attr("float_mean") == 1; }

// How plane_means adds up a plane.
enum class MeanRule {
  Integer,          // PyTorch's quantized mean of a contiguous tensor (ReduceOps.cpp, mean_out_quantized_cpu):
                    // nearbyint(fl(float(sum q) / float(count)))
  FloatInOrder,     // that op on other layouts: the float sum of the d one after another in (h, w) order
                    // (SumKernel.cpp: its vectorized channel blocks add the rows in order up to 16 rows;
                    // every path does for up to 4)
  FloatContiguous,  // a PT2E island's aten mean of a contiguous float tensor: aten_contiguous_sum of the d
};

// The mean over H and W of each (image, channel) of the NHWC buffer of `a`'s input, written
// into `y` ((N, C) order). The float rules dequantize d = fl(s * float(q - zp)) per element,
// take m = fl(sum / float(count)) and quantize y = rne(fl(m * inv_scale)) + zp: half-way ties of
// the exact mean (even counts) round the way this float arithmetic lands, as in PyTorch.
void plane_means(const OpArgs& a, MeanRule rule, float inv_scale, std::vector<uint8_t>& y) {
  const Value& xv = a.in();
  const Buffer& x = a.in_buf();
  const int64_t batch = xv.shape[0], c = xv.shape[1], hw = xv.shape[2] * xv.shape[3];
  const int32_t zp = xv.q.zero_point[0], lo = dtype_min(xv.dtype), hi = dtype_max(xv.dtype);
  const float scale = xv.q.scale[0];
  std::vector<float> d(static_cast<size_t>(hw));
  y.resize(static_cast<size_t>(batch * c));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t sum = 0;
      float float_sum = 0.0f;
      for (int64_t p = 0; p < hw; ++p) {
        const uint8_t v = x.q[(b * hw + p) * c + ch];
        const int32_t q = a.is_signed() ? static_cast<int8_t>(v) : v;
        sum += q;
        d[p] = scale * static_cast<float>(q - zp);
        if (rule == MeanRule::FloatInOrder) float_sum += d[p];
      }
      if (rule == MeanRule::FloatContiguous) float_sum = aten_contiguous_sum(d.data(), hw);
      const int64_t out = rule == MeanRule::Integer
          ? static_cast<int64_t>(std::nearbyint(static_cast<float>(sum) / static_cast<float>(hw)))
          : int64_t{cvtps_epi32((float_sum / static_cast<float>(hw)) * inv_scale)} + zp;
      y[b * c + ch] = static_cast<uint8_t>(std::clamp<int64_t>(out, lo, hi));
    }
}

// PT2E's quantize multiplies by 1.0 / scale computed in double and rounded to float32
// (torch.ops.quantized_decomposed.quantize_per_tensor with a Python float scale).
float pt2e_inverse_scale(float scale) { return static_cast<float>(1.0 / static_cast<double>(scale)); }

// A PT2E mean or adaptive_avg_pool2d to 1x1 (float_mean): aten's float mean of the dequantized plane.
void run_float_mean_pool(const OpArgs& a) {
  Buffer& y = a.out_buf();
  y.torch_channels_last = false;  // (N, C, 1, 1): NCHW and NHWC storage coincide
  plane_means(a, MeanRule::FloatContiguous, pt2e_inverse_scale(a.in().q.scale[0]), y.q);
}

// A PT2E pooling island (float_mean): dequantized d = fl(s * float(q - zp)), aten's float pooling of the
// contiguous float tensor (`pool`: NCHW float32 in, out), quantized with PT2E's inverse scale.
template <typename FloatPool>
void run_float_pool_island(const OpArgs& a, FloatPool pool) {
  const Value &xv = a.in(), &out = a.out();
  const std::vector<uint8_t> logical = to_logical(a.in_buf().q, xv.shape);
  std::vector<float> x(logical.size()), y(static_cast<size_t>(a.out_count()));
  const float scale = xv.q.scale[0];
  const int32_t zp = xv.q.zero_point[0];
  for (size_t i = 0; i < x.size(); ++i) {
    const int32_t q = a.is_signed() ? static_cast<int8_t>(logical[i]) : logical[i];
    x[i] = static_cast<float>(q - zp) * scale;
  }
  pool(x.data(), y.data());
  const float inv_scale = pt2e_inverse_scale(out.q.scale[0]);
  const int32_t out_zp = out.q.zero_point[0], lo = dtype_min(out.dtype), hi = dtype_max(out.dtype);
  std::vector<uint8_t> q(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const auto v = static_cast<int32_t>(std::nearbyint(y[i] * inv_scale)) + out_zp;
    q[i] = static_cast<uint8_t>(std::min(std::max(v, lo), hi));
  }
  Buffer& out_buf = a.out_buf();
  out_buf.torch_channels_last = false;
  out_buf.q = to_storage(std::move(q), out.shape);
}

}  // namespace

void run_max_pool2d(const OpArgs& a) {
  Pool2dShape s = window_shape(a);
  Buffer& y = a.out_buf();
  y.torch_channels_last = a.in_buf().torch_channels_last;
  y.q.resize(a.out_count());
  const uint8_t* x = a.in_buf().q.data();
  // PyTorch's qnnpack engine hands uint8 max_pool2d without ceil_mode to QNNPACK, whose window taps
  // outside the image read the nearest edge pixel rather than being left out (its indirection
  // clamps the coordinates to the image). Without dilation that pixel lies in the window anyway;
  // with dilation it may not, so the qnnpack profile pools over a copy padded with edge pixels.
  std::vector<uint8_t> edge_padded;
  if (follows_qnnpack_kernels(a.profile) && !a.is_signed() && a.node.int_attr("ceil_mode") == 0 &&
      (s.dh > 1 || s.dw > 1) && (s.ph > 0 || s.pw > 0)) {
    edge_padded = pad_with_edges(x, s);
    x = edge_padded.data();
    s.h += 2 * s.ph, s.w += 2 * s.pw, s.ph = 0, s.pw = 0;
  }
  // Workers take output rows [r0, r1) of the images: each image's rows as their own window of one
  // image, its first row's padding moved (Pool2dShape: ph may go negative).
  const int64_t rows = s.n * s.oh, row_elements = s.ow * s.c;
  uint8_t* dst = y.q.data();
  parallel_slices(rows, std::max<int64_t>(1, kMinElementsPerWorker / row_elements), 1, a.threads,
                  [&](int64_t r0, int64_t r1) {
                    for (int64_t r = r0; r < r1;) {
                      const int64_t b = r / s.oh, oy0 = r % s.oh, oy1 = std::min(s.oh, oy0 + (r1 - r));
                      Pool2dShape part = s;
                      part.n = 1, part.oh = oy1 - oy0, part.ph = s.ph - oy0 * s.sh;
                      a.k.max_pool2d(x + b * s.h * s.w * s.c, part, a.is_signed(), dst + r * row_elements);
                      r += oy1 - oy0;
                    }
                  });
}

void run_adaptive_avg_pool2d(const OpArgs& a) {
  if (float_mean(a.node) && a.out().shape[2] == 1 && a.out().shape[3] == 1) return run_float_mean_pool(a);
  if (float_mean(a.node)) {
    return run_float_pool_island(a, [&](const float* x, float* y) {
      float_adaptive_avg_pool2d(a.in().shape, x, a.out().shape, y);
    });
  }
  const Pool2dShape s = pool_shape(a);
  const Value &xv = a.in(), &out = a.out();
  const Buffer& x = a.in_buf();
  AdaptivePoolParams p{AvgPoolRule::FbgemmNhwc, xv.q.scale[0], out.q.scale[0], out.q.zero_point[0],
                       dtype_min(out.dtype), dtype_max(out.dtype)};
  const bool tiles = s.h % s.oh == 0 && s.w % s.ow == 0;
  if (follows_int32_bias_rules(a.profile) && tiles && !a.is_signed()) {
    p.rule = AvgPoolRule::Qnnpack;
  } else if (!x.torch_channels_last) {
    p.rule = AvgPoolRule::FbgemmNchw;
  }
  Buffer& y = a.out_buf();
  y.torch_channels_last = x.torch_channels_last;
  y.q.resize(a.out_count());
  a.k.adaptive_avg_pool2d(x.q.data(), s, a.is_signed(), p, y.q.data());
}

// QNNPACK's multiplier of a window of `count` taps: fl(s_in / fl(s_out * count))
// (average-pooling.c, global-average-pooling.c).
static float qnnpack_pool_multiplier(float in_scale, float out_scale, int64_t count) {
  return in_scale / (out_scale * static_cast<float>(count));
}

// PyTorch takes its NHWC kernel for channels_last inputs and avg_pool2d_out_frame
// otherwise (int32_bias, fbgemm, fixed_point). Under the qnnpack profile, uint8
// inputs without ceil_mode take QNNPACK's average pooling, as PyTorch's qnnpack
// engine does; its output keeps the input's memory format.
void run_avg_pool2d(const OpArgs& a) {
  if (float_mean(a.node)) {
    return run_float_pool_island(a, [&](const float* x, float* y) {
      float_avg_pool2d(a.node, a.in().shape, x, a.out().shape, y);
    });
  }
  const Pool2dShape s = window_shape(a);
  const Node& n = a.node;
  const Value& out = a.out();
  const Buffer& x = a.in_buf();
  const bool nhwc = x.torch_channels_last && x.torch_dense;
  const bool qnnpack = follows_qnnpack_kernels(a.profile) && !a.is_signed() && n.int_attr("ceil_mode") == 0;
  AvgPool2dParams p{nhwc ? AvgPool2dRule::Nhwc : AvgPool2dRule::Nchw, n.int_attr("count_include_pad") != 0,
                    static_cast<int32_t>(n.int_attr("divisor_override")), out.q.zero_point[0], dtype_min(out.dtype),
                    dtype_max(out.dtype)};
  if (qnnpack) {
    p.rule = AvgPool2dRule::Qnnpack;
    p.qnnpack_mult = qnnpack_pool_multiplier(a.in().q.scale[0], out.q.scale[0], s.kh * s.kw);
  }
  Buffer& y = a.out_buf();
  y.torch_channels_last = qnnpack ? x.torch_channels_last : nhwc;
  y.q.resize(a.out_count());
  a.k.avg_pool2d(x.q.data(), s, a.is_signed(), p, y.q.data());
}

// Mean over H and W under the qnnpack profile: QNNPACK's global average pooling
// (ReduceOps.cpp qnnpack_mean), i.e. the Qnnpack adaptive pool rule over one 1x1 window.
static void run_mean_qnnpack(const OpArgs& a) {
  const Value &xv = a.in(), &out = a.out();
  const Shape& x = xv.shape;
  const Pool2dShape s{x[0], x[2], x[3], x[1], 1, 1, 1, 1, 1, 1, 0, 0, 1, 1};
  const AdaptivePoolParams p{AvgPoolRule::Qnnpack, xv.q.scale[0], out.q.scale[0], out.q.zero_point[0],
                             dtype_min(out.dtype), dtype_max(out.dtype)};
  Buffer& y = a.out_buf();
  y.torch_channels_last = false;  // (N, C) or (N, C, 1, 1): NCHW and NHWC storage coincide
  y.q.resize(a.out_count());
  a.k.adaptive_avg_pool2d(a.in_buf().q.data(), s, false, p, y.q.data());
}

// Mean over H and W with the input's qparams: plane_means, the integer rule for a contiguous
// dense input (not under float_mean); under the qnnpack profile QNNPACK's global average pool.
void run_mean(const OpArgs& a) {
  if (float_mean(a.node)) return run_float_mean_pool(a);
  if (follows_qnnpack_kernels(a.profile) && !a.is_signed()) return run_mean_qnnpack(a);
  const Buffer& x = a.in_buf();
  std::vector<uint8_t> y;
  plane_means(a, !x.torch_channels_last && x.torch_dense ? MeanRule::Integer : MeanRule::FloatInOrder, 1.0f / a.in().q.scale[0], y);
  Buffer& out = a.out_buf();
  out.torch_channels_last = false;
  // (N, C) or (N, C, 1, 1): NCHW and NHWC storage coincide.
  out.q = std::move(y);
}

}  // namespace qnnpy
