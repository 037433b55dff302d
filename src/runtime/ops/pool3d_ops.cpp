// Runners of the 3-D average pools (ops/pool3d.cpp). Rank-5 values are stored NCDHW; Buffer::torch_channels_last
// says whether PyTorch holds the tensor channels_last_3d (its quantized conv3d returns it so), which selects the
// adaptive pool's rule. Scalar kernels only (kernels/scalar/pool3d.cpp): these pools are rare and small in the
// models that have them.
#include "kernels/scalar/scalar_kernels.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

Pool3dShape pool3d_shape(const OpArgs& a) {
  const Shape &x = a.in().shape, &y = a.out().shape;
  return {x[0], x[1], x[2], x[3], x[4], y[2], y[3], y[4], 1, 1, 1, 1, 1, 1, 0, 0, 0};
}

}  // namespace

// PyTorch's quantized avg_pool3d makes its input channels_last_3d and always runs its NDHWC kernel
// (AveragePool3d.cpp), under every engine; the output is channels_last_3d.
void run_avg_pool3d(const OpArgs& a) {
  const Node& n = a.node;
  Pool3dShape s = pool3d_shape(a);
  const auto &k = n.ints_attr("kernel"), &st = n.ints_attr("stride"), &pd = n.ints_attr("padding");
  s.kd = k[0], s.kh = k[1], s.kw = k[2], s.sd = st[0], s.sh = st[1], s.sw = st[2], s.pd = pd[0], s.ph = pd[1], s.pw = pd[2];
  const Value& out = a.out();
  const AvgPool2dParams p{AvgPool2dRule::Nhwc, n.int_attr("count_include_pad") != 0,
                          static_cast<int32_t>(n.int_attr("divisor_override")), out.q.zero_point[0], dtype_min(out.dtype),
                          dtype_max(out.dtype)};
  Buffer& y = a.out_buf();
  y.torch_channels_last = true;
  y.torch_dense = true;
  y.q.resize(a.out_count());
  avg_pool3d_scalar(a.in_buf().q.data(), s, a.is_signed(), p, y.q.data());
}

// PyTorch's quantized adaptive_avg_pool3d: its NDHWC kernel for a channels_last_3d input, its contiguous one
// otherwise (AdaptiveAveragePooling.cpp; no QNNPACK path for 3-D); the output keeps the input's layout.
void run_adaptive_avg_pool3d(const OpArgs& a) {
  const Value &xv = a.in(), &out = a.out();
  const Buffer& x = a.in_buf();
  const AdaptivePoolParams p{x.torch_channels_last ? AvgPoolRule::FbgemmNhwc : AvgPoolRule::FbgemmNchw, xv.q.scale[0],
                             out.q.scale[0], out.q.zero_point[0], dtype_min(out.dtype), dtype_max(out.dtype)};
  Buffer& y = a.out_buf();
  y.torch_channels_last = x.torch_channels_last;
  y.torch_dense = true;
  y.q.resize(a.out_count());
  adaptive_avg_pool3d_scalar(x.q.data(), pool3d_shape(a), a.is_signed(), p, y.q.data());
}

}  // namespace qnnpy
