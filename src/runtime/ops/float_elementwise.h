// Element-wise loops of the float runners (float_ops.cpp, float_transformer_ops.cpp): float32
// in logical order in Buffer::f, NumPy broadcasting for two inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/ops/op_args.h"

namespace qnnpy {

// Row-major strides of `in` seen from an output of rank `rank` (NumPy broadcasting): 0 along
// the axes `in` lacks or holds with extent 1.
inline std::vector<int64_t> broadcast_strides(const Shape& in, size_t rank) {
  std::vector<int64_t> stride(rank, 0);
  const size_t lead = rank - in.size();
  int64_t s = 1;
  for (size_t d = rank; d-- > lead;) {
    stride[d] = in[d - lead] == 1 ? 0 : s;
    s *= in[d - lead];
  }
  return stride;
}

// Calls f(out_index, offset_0, offset_1) for every element of `out`, the offsets into two inputs
// broadcast to it.
template <class F>
void for_each_broadcast(const Shape& out, const Shape& in0, const Shape& in1, F f) {
  const size_t rank = out.size();
  const std::vector<int64_t> s0 = broadcast_strides(in0, rank), s1 = broadcast_strides(in1, rank);
  std::vector<int64_t> index(rank, 0);
  const int64_t count = num_elements(out);
  for (int64_t e = 0; e < count; ++e) {
    int64_t o0 = 0, o1 = 0;
    for (size_t d = 0; d < rank; ++d) {
      o0 += index[d] * s0[d];
      o1 += index[d] * s1[d];
    }
    f(e, o0, o1);
    for (size_t d = rank; d-- > 0 && ++index[d] == out[d];) index[d] = 0;
  }
}

template <class F>
void float_binary(const OpArgs& a, F f) {
  const std::vector<float>&x = a.in_buf(0).f, &y = a.in_buf(1).f;
  std::vector<float>& out = a.out_buf().f;
  out.resize(static_cast<size_t>(a.out_count()));
  for_each_broadcast(a.out().shape, a.in(0).shape, a.in(1).shape,
                     [&](int64_t e, int64_t i, int64_t j) { out[e] = f(x[i], y[j]); });
}

template <class F>
void float_unary(const OpArgs& a, F f) {
  const std::vector<float>& x = a.in_buf().f;
  std::vector<float>& out = a.out_buf().f;
  out.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f(x[i]);
}

}  // namespace qnnpy
