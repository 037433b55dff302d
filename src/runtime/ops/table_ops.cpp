#include "runtime/ops/unary_tables.h"

namespace qnnpy {
namespace {

// Storage index (NHWC for rank 4) of the element at position `i` of PyTorch's memory order.
int64_t storage_index(const Shape& s, bool channels_last, int64_t i) {
  if (s.size() != 4 || channels_last) return i;
  const int64_t c = s[1], hw = s[2] * s[3];
  const int64_t n = i / (c * hw), ch = (i / hw) % c, p = i % hw;
  return (n * hw + p) * c + ch;
}

}  // namespace

void run_table(const OpArgs& a, const UnaryTables& t) {
  const Buffer& x = a.in_buf();
  Buffer& y = a.out_buf();
  const int64_t n = a.out_count();
  y.torch_channels_last = x.torch_channels_last;
  y.q.resize(n);
  a.k.lookup(x.q.data(), n, t.vector.data(), y.q.data());
  if (t.tail == t.vector) return;
  for (int64_t i = n - n % kTorchVectorBlock; i < n; ++i) {
    const int64_t s = storage_index(a.out().shape, x.torch_channels_last, i);
    y.q[s] = t.tail[x.q[s]];
  }
}

}  // namespace qnnpy
