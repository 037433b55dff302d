#include <cmath>

#include "runtime/ops/runners.h"

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

}  // namespace

void run_max_pool2d(const OpArgs& a) {
  const Pool2dShape s = window_shape(a);
  Buffer& y = a.out_buf();
  y.torch_channels_last = a.in_buf().torch_channels_last;
  y.q.resize(a.out_count());
  a.k.max_pool2d(a.in_buf().q.data(), s, a.is_signed(), y.q.data());
}

void run_adaptive_avg_pool2d(const OpArgs& a) {
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

// PyTorch takes its NHWC kernel for channels_last inputs and avg_pool2d_out_frame
// otherwise; the int32_bias profile uses the same formulas (QNNPACK's own
// average pool is not reproduced).
void run_avg_pool2d(const OpArgs& a) {
  const Pool2dShape s = window_shape(a);
  const Node& n = a.node;
  const Value& out = a.out();
  const Buffer& x = a.in_buf();
  const bool nhwc = x.torch_channels_last && x.torch_dense;
  AvgPool2dParams p{nhwc ? AvgPool2dRule::Nhwc : AvgPool2dRule::Nchw, n.int_attr("count_include_pad") != 0,
                    static_cast<int32_t>(n.int_attr("divisor_override")), out.q.zero_point[0], dtype_min(out.dtype),
                    dtype_max(out.dtype)};
  Buffer& y = a.out_buf();
  y.torch_channels_last = nhwc;
  y.q.resize(a.out_count());
  a.k.avg_pool2d(x.q.data(), s, a.is_signed(), p, y.q.data());
}

// Mean over H and W with the input's qparams (ReduceOps.cpp, mean_out_quantized_cpu).
// Contiguous input: nearbyint(fl(float(sum q) / float(count))). Otherwise PyTorch
// dequantizes, takes the float mean and quantizes; we round the exact mean of
// (q - zp) half to even, which equals it whenever count is odd (no ties exist and
// the float error stays far below the 1 / (2 count) margin).
void run_mean(const OpArgs& a) {
  const Value& xv = a.in();
  const Buffer& x = a.in_buf();
  const int64_t batch = xv.shape[0], c = xv.shape[1], hw = xv.shape[2] * xv.shape[3];
  const int32_t zp = xv.q.zero_point[0], lo = dtype_min(xv.dtype), hi = dtype_max(xv.dtype);
  const bool contiguous_rule = !x.torch_channels_last && x.torch_dense;
  std::vector<uint8_t> y(static_cast<size_t>(batch * c));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t sum = 0;
      for (int64_t p = 0; p < hw; ++p) {
        const uint8_t v = x.q[(b * hw + p) * c + ch];
        sum += a.is_signed() ? static_cast<int8_t>(v) : v;
      }
      int64_t q;
      if (contiguous_rule) {
        q = static_cast<int64_t>(std::nearbyint(static_cast<float>(sum) / static_cast<float>(hw)));
      } else {
        const int64_t acc = sum - zp * hw;  // round acc / hw half to even, exactly
        int64_t quot = acc / hw, rem = acc % hw;
        if (rem < 0) rem += hw, --quot;
        if (2 * rem > hw || (2 * rem == hw && (quot & 1))) ++quot;
        q = quot + zp;
      }
      y[b * c + ch] = static_cast<uint8_t>(std::clamp<int64_t>(q, lo, hi));
    }
  Buffer& out = a.out_buf();
  out.torch_channels_last = false;
  // (N, C) or (N, C, 1, 1): NCHW and NHWC storage coincide.
  out.q = std::move(y);
}

}  // namespace qnnpy
