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

// PyTorch's qnnpack clamp (qrelu.cpp qnnpack_clamp) of a channels_last tensor: it clamps the
// bytes in memory order but returns them as a contiguous tensor. Its logical element i (NCHW
// order) is byte i of the channels_last memory, which is our storage order for rank 4.
void reorder_like_qnnpack_clamp(const Shape& shape, Buffer& y) {
  std::vector<uint8_t> storage(y.q.size());
  for (int64_t i = 0; i < static_cast<int64_t>(storage.size()); ++i) storage[storage_index(shape, false, i)] = y.q[i];
  y.q = std::move(storage);
  y.torch_channels_last = false;
}

}  // namespace

void run_table(const OpArgs& a, const UnaryTables& t) {
  const Buffer& x = a.in_buf();
  Buffer& y = a.out_buf();
  const int64_t n = a.out_count();
  y.torch_channels_last = x.torch_channels_last;
  y.q.resize(n);
  a.k.lookup(x.q.data(), n, t.vector.data(), y.q.data());
  if (a.node.op == "clamp" && follows_qnnpack_kernels(a.profile) && !a.is_signed() && a.out().shape.size() == 4 &&
      x.torch_channels_last && x.torch_dense) {
    return reorder_like_qnnpack_clamp(a.out().shape, y);  // one QNNPACK kernel: no scalar tail
  }
  if (t.tail == t.vector) return;
  for (int64_t i = n - n % kTorchVectorBlock; i < n; ++i) {
    const int64_t s = storage_index(a.out().shape, x.torch_channels_last, i);
    y.q[s] = t.tail[x.q[s]];
  }
}

}  // namespace qnnpy
