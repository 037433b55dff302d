#include <cstring>

#include "ir/nearest.h"
#include "runtime/layout.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
void run_reshape(const OpArgs& a) {
  const Value &xv = a.in(), &out = a.out();
  const Buffer& x = a.in_buf();
  Buffer& y = a.out_buf();
  // Any real reshape of a channels_last tensor copies it to contiguous order in PyTorch.
  y.torch_channels_last = x.torch_channels_last && xv.shape == out.shape;
  y.q = to_storage(to_logical(x.q, xv.shape), out.shape);
}

// The output of a permutation is contiguous in PyTorch only after .contiguous(),
// which every consumer of ours implies.
void run_permute(const OpArgs& a) {
  const Shape& in = a.in().shape;
  const Shape& out = a.out().shape;
  const auto& perm = a.node.ints_attr("perm");
  const std::vector<uint8_t> x = to_logical(a.in_buf().q, a.in().shape);
  std::vector<int64_t> in_stride(in.size(), 1);
  for (int64_t d = static_cast<int64_t>(in.size()) - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * in[d + 1];
  std::vector<uint8_t> y(x.size());
  std::vector<int64_t> index(out.size(), 0);
  for (size_t e = 0; e < y.size(); ++e) {
    int64_t offset = 0;
    for (size_t d = 0; d < out.size(); ++d) offset += index[d] * in_stride[perm[d]];
    y[e] = x[offset];
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0 && ++index[d] == out[d]; --d) index[d] = 0;
  }
  Buffer& b = a.out_buf();
  b.torch_channels_last = false;
  b.q = to_storage(std::move(y), a.out().shape);
}

// A slice is a view: dense only if every dim outside the axis in PyTorch's memory order has size 1.
void run_slice(const OpArgs& a) {
  const Shape& in = a.in().shape;
  const int64_t axis = a.node.int_attr("axis") < 0 ? a.node.int_attr("axis") + static_cast<int64_t>(in.size())
                                                   : a.node.int_attr("axis");
  const int64_t begin = a.node.int_attr("begin"), end = a.node.int_attr("end");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in[d];
  for (size_t d = axis + 1; d < in.size(); ++d) inner *= in[d];
  const std::vector<uint8_t> x = to_logical(a.in_buf().q, a.in().shape);
  std::vector<uint8_t> y;
  y.reserve(static_cast<size_t>(outer * (end - begin) * inner));
  for (int64_t o = 0; o < outer; ++o) {
    const uint8_t* row = x.data() + (o * in[axis] + begin) * inner;
    y.insert(y.end(), row, row + (end - begin) * inner);
  }
  const Buffer& src = a.in_buf();
  Buffer& b = a.out_buf();
  b.torch_channels_last = src.torch_channels_last;
  const bool nhwc_order = in.size() == 4 && src.torch_channels_last;
  int64_t outside = 1;  // elements outer to the axis in memory order
  if (nhwc_order) {
    outside = axis == 1 ? in[0] * in[2] * in[3] : (axis == 0 ? 1 : in[0] * (axis == 3 ? in[2] : 1));
  } else {
    outside = outer;
  }
  b.torch_dense = src.torch_dense && outside == 1;
  b.q = to_storage(std::move(y), a.out().shape);
}

void run_upsample_nearest2d(const OpArgs& a) {
  const Shape &in = a.in().shape, &out = a.out().shape;
  const int64_t c = in[1];
  const double scale_h = a.node.float_attr("scale_h"), scale_w = a.node.float_attr("scale_w");
  const uint8_t* x = a.in_buf().q.data();
  Buffer& b = a.out_buf();
  b.torch_channels_last = a.in_buf().torch_channels_last;
  b.q.resize(a.out_count());
  for (int64_t n = 0; n < out[0]; ++n)
    for (int64_t oy = 0; oy < out[2]; ++oy) {
      const int64_t iy = nearest_source_index(oy, in[2], out[2], scale_h);
      for (int64_t ox = 0; ox < out[3]; ++ox) {
        const int64_t ix = nearest_source_index(ox, in[3], out[3], scale_w);
        std::memcpy(&b.q[((n * out[2] + oy) * out[3] + ox) * c], x + ((n * in[2] + iy) * in[3] + ix) * c,
                    static_cast<size_t>(c));
      }
    }
}

}  // namespace qnnpy
