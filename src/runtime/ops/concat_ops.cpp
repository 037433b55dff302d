#include <cstring>

#include "runtime/layout.h"
#include "runtime/ops/runners.h"
#include "runtime/ops/unary_tables.h"

namespace qnnpy {
namespace {

// PyTorch's qcat takes its NHWC kernel when concatenating 4-D channels_last
// tensors along channels (is_cat_nhwc_fast_path); otherwise it dequantizes,
// concatenates in float and quantizes (quantized_cat_impl).
bool nhwc_fast_path(const OpArgs& a, int64_t axis) {
  if (axis != 1 || a.out().shape.size() != 4) return false;
  for (size_t i = 0; i < a.node.inputs.size(); ++i) {
    const Buffer& b = a.in_buf(i);
    const Shape& s = a.in(i).shape;
    if (!b.torch_dense || !(b.torch_channels_last || s[2] * s[3] == 1)) return false;
  }
  return true;
}

// Channel-axis concatenation in NHWC storage. In the fast path an input with the
// output's qparams is copied; others use the vector table for the first
// 8 * floor(C / 8) channels of each pixel (qcat_nhwc_kernel's 32- and 8-lane loops)
// and the scalar table for the rest. The generic path uses the scalar formulas only.
void concat_channels(const OpArgs& a, bool fast, uint8_t* out) {
  const Value& ov = a.out();
  const int64_t pixels = ov.shape[0] * ov.shape[2] * ov.shape[3], c_out = ov.shape[1];
  int64_t c0 = 0;
  for (size_t i = 0; i < a.node.inputs.size(); ++i) {
    const Value& v = a.in(i);
    const uint8_t* x = a.in_buf(i).q.data();
    const int64_t c = v.shape[1];
    const bool copy = fast && v.q.scale[0] == ov.q.scale[0] && v.q.zero_point[0] == ov.q.zero_point[0];
    const UnaryTables t = requantize_tables(a.is_signed(i), v.q.scale[0], v.q.zero_point[0], ov.q.scale[0],
                                            ov.q.zero_point[0], dtype_min(ov.dtype), dtype_max(ov.dtype));
    const int64_t vector_channels = fast ? c / 8 * 8 : 0;
    for (int64_t p = 0; p < pixels; ++p) {
      const uint8_t* src = x + p * c;
      uint8_t* dst = out + p * c_out + c0;
      if (copy) {
        std::memcpy(dst, src, static_cast<size_t>(c));
        continue;
      }
      a.k.lookup(src, vector_channels, t.vector.data(), dst);
      a.k.lookup(src + vector_channels, c - vector_channels, t.tail.data(), dst + vector_channels);
    }
    c0 += c;
  }
}

// Any other axis or rank: logical order, scalar formulas.
void concat_logical(const OpArgs& a, int64_t axis, uint8_t* out) {
  const Value& ov = a.out();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= ov.shape[d];
  for (size_t d = axis + 1; d < ov.shape.size(); ++d) inner *= ov.shape[d];
  const int64_t out_row = ov.shape[axis] * inner;
  std::vector<uint8_t> logical(num_elements(ov.shape));
  int64_t offset = 0;
  for (size_t i = 0; i < a.node.inputs.size(); ++i) {
    const Value& v = a.in(i);
    std::vector<uint8_t> x = to_logical(a.in_buf(i).q, v.shape);
    const UnaryTables t = requantize_tables(a.is_signed(i), v.q.scale[0], v.q.zero_point[0], ov.q.scale[0],
                                            ov.q.zero_point[0], dtype_min(ov.dtype), dtype_max(ov.dtype));
    a.k.lookup(x.data(), static_cast<int64_t>(x.size()), t.tail.data(), x.data());
    const int64_t row = v.shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) std::memcpy(&logical[o * out_row + offset], &x[o * row], static_cast<size_t>(row));
    offset += row;
  }
  const std::vector<uint8_t> stored = to_storage(std::move(logical), ov.shape);
  std::memcpy(out, stored.data(), stored.size());
}

}  // namespace

void run_cat(const OpArgs& a) {
  const Value& ov = a.out();
  int64_t axis = a.node.int_attr("axis");
  if (axis < 0) axis += static_cast<int64_t>(ov.shape.size());
  const bool fast = nhwc_fast_path(a, axis);
  Buffer& y = a.out_buf();
  y.q.resize(a.out_count());
  bool all_channels_last = true;
  for (size_t i = 0; i < a.node.inputs.size(); ++i) all_channels_last = all_channels_last && a.in_buf(i).torch_channels_last;
  y.torch_channels_last = fast || all_channels_last;
  if (ov.shape.size() == 4 && axis == 1) {
    concat_channels(a, fast, y.q.data());
  } else {
    concat_logical(a, axis, y.q.data());
  }
}

}  // namespace qnnpy
