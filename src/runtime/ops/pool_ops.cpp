#include "runtime/ops/runners.h"

namespace qnnpy {

void run_max_pool2d(const OpArgs& a) {
  Pool2dShape s = pool_shape(a);
  const Node& n = a.node;
  const auto &k = n.ints_attr("kernel"), &st = n.ints_attr("stride"), &pd = n.ints_attr("padding"),
             &dl = n.ints_attr("dilation");
  s.kh = k[0], s.kw = k[1], s.sh = st[0], s.sw = st[1], s.ph = pd[0], s.pw = pd[1], s.dh = dl[0], s.dw = dl[1];
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
  if (a.profile == Profile::Int32Bias && tiles && !a.is_signed()) {
    p.rule = AvgPoolRule::Qnnpack;
  } else if (!x.torch_channels_last) {
    p.rule = AvgPoolRule::FbgemmNchw;
  }
  Buffer& y = a.out_buf();
  y.torch_channels_last = x.torch_channels_last;
  y.q.resize(a.out_count());
  a.k.adaptive_avg_pool2d(x.q.data(), s, a.is_signed(), p, y.q.data());
}

}  // namespace qnnpy
