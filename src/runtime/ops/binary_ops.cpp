#include "runtime/layout.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

// Values of input `i` broadcast to the output shape, in the output's storage order.
std::vector<uint8_t> broadcast_input(const OpArgs& a, size_t i) {
  const Value& v = a.in(i);
  const Shape& out = a.out().shape;
  const std::vector<uint8_t>& stored = a.in_buf(i).q;
  if (v.shape == out) return stored;
  const std::vector<uint8_t> logical = to_logical(stored, v.shape);
  // Strides of the input over the output's dims; 0 along broadcast dims.
  const size_t rank = out.size(), lead = rank - v.shape.size();
  std::vector<int64_t> stride(rank, 0);
  for (int64_t d = static_cast<int64_t>(rank) - 1, s = 1; d >= static_cast<int64_t>(lead); --d) {
    const int64_t size = v.shape[d - lead];
    stride[d] = size == 1 ? 0 : s;
    s *= size;
  }
  const int64_t count = num_elements(out);
  std::vector<uint8_t> expanded(count);
  std::vector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * stride[d];
    expanded[e] = logical[offset];
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0 && ++index[d] == out[d]; --d) index[d] = 0;
  }
  return to_storage(std::move(expanded), out);
}

}  // namespace

// PyTorch's qmul (quantized::mul, both engines): mult = fl(fl(s_a * s_b) * fl(1 / s_out)).
void run_mul(const OpArgs& a) {
  const Value &av = a.in(0), &bv = a.in(1), &out = a.out();
  const std::vector<uint8_t> x = broadcast_input(a, 0), y = broadcast_input(a, 1);
  MulParams p{(av.q.scale[0] * bv.q.scale[0]) * (1.0f / out.q.scale[0]), av.q.zero_point[0], bv.q.zero_point[0],
              out.q.zero_point[0], dtype_min(out.dtype), dtype_max(out.dtype)};
  Buffer& result = a.out_buf();
  // The output takes the memory format PyTorch suggests for the first operand.
  result.torch_channels_last = a.in_buf(0).torch_channels_last;
  result.q.resize(a.out_count());
  a.k.mul(x.data(), y.data(), a.out_count(), a.is_signed(), p, result.q.data());
}

}  // namespace qnnpy
