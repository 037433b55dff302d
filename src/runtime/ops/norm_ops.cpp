#include <cmath>

#include "runtime/ops/runners.h"

namespace qnnpy {

// PyTorch's compute_fused_params (quantized batch norm, both engines):
//   inv_sigma = (float)(1.0 / double(sqrtf(fl(var + eps))))
//   alpha = (float)(double(fl(inv_sigma * w)) * (s_in / s_out))             (scale ratio in double)
//   beta  = (float)(double(fl(b - fl(fl(mean * inv_sigma) * w))) / s_out)
// The output is always channels_last.
void run_batch_norm2d(const OpArgs& a) {
  const Node& n = a.node;
  const Value &xv = a.in(), &out = a.out();
  const int64_t c = xv.shape[1];
  const float* w = a.graph.node_param(n, "bn_weight").data<float>();
  const float* b = a.graph.node_param(n, "bn_bias").data<float>();
  const float* mean = a.graph.node_param(n, "bn_running_mean").data<float>();
  const float* var = a.graph.node_param(n, "bn_running_var").data<float>();
  const float eps = static_cast<float>(n.float_attr("eps"));
  const double s_in = xv.q.scale[0], s_out = out.q.scale[0];
  std::vector<float> alpha(c), beta(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    const float inv_sigma = static_cast<float>(1.0 / static_cast<double>(std::sqrt(var[ch] + eps)));
    alpha[ch] = static_cast<float>(static_cast<double>(inv_sigma * w[ch]) * (s_in / s_out));
    beta[ch] = static_cast<float>(static_cast<double>(b[ch] - (mean[ch] * inv_sigma) * w[ch]) / s_out);
  }
  const int32_t zp = out.q.zero_point[0];
  BatchNormParams p{alpha.data(), beta.data(), xv.q.zero_point[0], zp,
                    n.int_attr("relu") ? zp : dtype_min(out.dtype), dtype_max(out.dtype)};
  Buffer& y = a.out_buf();
  y.torch_channels_last = true;
  y.q.resize(a.out_count());
  a.k.batch_norm(a.in_buf().q.data(), a.out_count() / c, c, a.is_signed(), p, y.q.data());
}

}  // namespace qnnpy
