#include "runtime/layout.h"
#include "runtime/ops/runners.h"

namespace qnnpy {

void run_reshape(const OpArgs& a) {
  const Value &xv = a.in(), &out = a.out();
  const Buffer& x = a.in_buf();
  std::vector<uint8_t> logical = xv.shape.size() == 4 ? nhwc_to_nchw(x.q.data(), xv.shape) : x.q;
  Buffer& y = a.out_buf();
  y.torch_channels_last = x.torch_channels_last;
  y.q = out.shape.size() == 4 ? nchw_to_nhwc(logical.data(), out.shape) : std::move(logical);
}

}  // namespace qnnpy
