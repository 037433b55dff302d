#include "runtime/layout.h"
#include "runtime/ops/runners.h"

namespace qnnpy {

void run_quantize(const OpArgs& a) {
  const Value& out = a.out();
  const int64_t count = a.out_count();
  std::vector<uint8_t> q(count);
  a.k.quantize(a.in_buf().f.data(), count, 1.0f / out.q.scale[0], out.q.zero_point[0], dtype_min(out.dtype),
               dtype_max(out.dtype), q.data());
  a.out_buf().q = to_storage(std::move(q), out.shape);
}

void run_dequantize(const OpArgs& a) {
  const Value& xv = a.in();
  const Buffer& x = a.in_buf();
  const std::vector<uint8_t> logical = to_logical(x.q, xv.shape);
  Buffer& y = a.out_buf();
  y.f.resize(a.out_count());
  a.k.dequantize(logical.data(), a.out_count(), a.is_signed(), xv.q.scale[0], xv.q.zero_point[0], y.f.data());
}

}  // namespace qnnpy
