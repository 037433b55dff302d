#include <algorithm>
#include <stdexcept>
#include <string>

#include "runtime/ops/float_movement_runners.h"
#include "runtime/ops/plain_values.h"
#include "runtime/parallel.h"

namespace qnnpy {
namespace {

// Where output index i along one axis reads its input: an offset into the input (the source
// index times the input's stride along the source axis), or -1 for a padding position.
using AxisMap = std::vector<int64_t>;

// How many trailing axes of the output read one contiguous run of the input, and that run's length: the last
// axis when it reads consecutive elements, and each axis before it whose entries step by the length of the run
// after it (an expand's copied blocks, a slice along an outer axis). 0 axes where the last axis does not.
struct ContiguousTail {
  size_t axes = 0;
  int64_t length = 1;
};
ContiguousTail contiguous_tail(const std::vector<AxisMap>& maps, const Shape& shape) {
  ContiguousTail tail;
  for (size_t d = shape.size(); d-- > 0;) {
    const AxisMap& m = maps[d];
    bool steps = m[0] >= 0;
    for (int64_t i = 1; i < shape[d] && steps; ++i) steps = m[i] == m[0] + i * tail.length;
    if (!steps) break;
    ++tail.axes;
    tail.length *= shape[d];
  }
  return tail;
}

// The first `axes` axes of the output, walked in order from the flat index `begin` over them: offset() is the sum
// of their map entries, padded() whether one of them is a padding position (-1), next() steps to the next index.
class OuterAxes {
 public:
  OuterAxes(const std::vector<AxisMap>& maps, const Shape& shape, size_t axes, int64_t begin)
      : maps_(maps), shape_(shape), index_(axes, 0) {
    for (size_t d = axes; d-- > 0; begin /= shape[d]) index_[d] = begin % shape[d];
  }
  int64_t offset() const {
    int64_t base = 0;
    for (size_t d = 0; d < index_.size(); ++d) base += maps_[d][index_[d]];
    return base;
  }
  bool padded() const {
    for (size_t d = 0; d < index_.size(); ++d) {
      if (maps_[d][index_[d]] < 0) return true;
    }
    return false;
  }
  void next() {
    for (size_t d = index_.size(); d-- > 0 && ++index_[d] == shape_[d];) index_[d] = 0;
  }

 private:
  const std::vector<AxisMap>& maps_;
  const Shape& shape_;
  std::vector<int64_t> index_;
};

// Whether the last two output axes transpose the input: the last reads it with one stride (above 1), the one
// before it reads consecutive elements.
bool transposes(const std::vector<AxisMap>& maps, const Shape& shape) {
  const size_t rank = shape.size();
  if (rank < 2 || shape[rank - 1] < 2) return false;
  const AxisMap &last = maps[rank - 1], &rows = maps[rank - 2];
  const int64_t stride = last[1] - last[0];
  if (stride <= 1 || rows[0] < 0) return false;
  for (int64_t i = 1; i < shape[rank - 1]; ++i) {
    if (last[i] != last[0] + i * stride) return false;
  }
  for (int64_t j = 1; j < shape[rank - 2]; ++j) {
    if (rows[j] != rows[0] + j) return false;
  }
  return true;
}

// remap where `transposes` holds: each matrix of the last two axes written 8 rows at a time, so that the 8 input
// elements a column reads are consecutive and each output cache line is written while it is loaded.
template <class T>
void transpose_blocks(const T* x, const std::vector<AxisMap>& maps, const Shape& shape, T fill, T* out, int threads) {
  const size_t rank = shape.size(), outer_axes = rank - 2;
  const int64_t rows = shape[rank - 2], width = shape[rank - 1], matrices = num_elements(shape) / (rows * width);
  const int64_t stride = maps[rank - 1][1] - maps[rank - 1][0], start = maps[rank - 2][0] + maps[rank - 1][0];
  constexpr int64_t kBlock = 8;
  parallel_slices(matrices, std::max<int64_t>(1, (1 << 16) / (rows * width)), 1, threads, [&](int64_t begin, int64_t end) {
    OuterAxes outer(maps, shape, outer_axes, begin);
    for (int64_t m = begin; m < end; ++m, outer.next()) {
      T* dst = out + m * rows * width;
      if (outer.padded()) {
        std::fill_n(dst, rows * width, fill);
      } else {
        const int64_t base = start + outer.offset();
        for (int64_t j0 = 0; j0 < rows; j0 += kBlock) {
          const int64_t block = std::min(kBlock, rows - j0);
          const T* src = x + base + j0;
          T* d0 = dst + j0 * width;
          for (int64_t i = 0; i < width; ++i) {
            for (int64_t j = 0; j < block; ++j) d0[j * width + i] = src[i * stride + j];
          }
        }
      }
    }
  });
}

// out[i_0, ..., i_r] = x[map_0[i_0] + ... + map_r[i_r]], or `fill` where an entry is -1. The output is written
// run by run (the trailing axes that read one contiguous run of the input, else the last axis), the runs split
// among the workers when there are many.
template <class T>
void remap(const OpArgs& a, const std::vector<AxisMap>& maps, T fill) {
  const Shape& shape = a.out().shape;
  const std::vector<T>& x = values_of<T>(a.in_buf());
  std::vector<T>& out = values_of<T>(a.out_buf());
  out.resize(static_cast<size_t>(a.out_count()));
  if (out.empty()) return;
  const size_t rank = shape.size();
  if (rank == 0) {
    out[0] = x[0];
    return;
  }
  const ContiguousTail tail = contiguous_tail(maps, shape);
  // The outer axes pick a run's start; the run is `width` elements of the output.
  const size_t outer_axes = tail.axes > 0 ? rank - tail.axes : rank - 1;
  const int64_t width = tail.axes > 0 ? tail.length : shape[rank - 1], runs = num_elements(shape) / width;
  int64_t tail_start = 0;  // the input offset of a run's first element, beyond the outer axes' entries
  for (size_t d = outer_axes; d < rank; ++d) tail_start += maps[d][0];
  const AxisMap& last = maps[rank - 1];
  const bool last_padded = std::any_of(last.begin(), last.end(), [](int64_t m) { return m < 0; });
  if (tail.axes == 0 && !last_padded && transposes(maps, shape)) {
    transpose_blocks(x.data(), maps, shape, fill, out.data(), a.threads);
    return;
  }
  auto write_runs = [&](int64_t begin, int64_t end) {
    OuterAxes outer(maps, shape, outer_axes, begin);
    for (int64_t r = begin; r < end; ++r, outer.next()) {
      T* dst = out.data() + r * width;
      if (outer.padded()) {
        std::fill_n(dst, width, fill);
        continue;
      }
      const int64_t base = outer.offset();
      if (tail.axes > 0) {
        std::copy_n(x.data() + base + tail_start, width, dst);
      } else if (!last_padded) {
        const T* src = x.data() + base;
        for (int64_t i = 0; i < width; ++i) dst[i] = src[last[i]];
      } else {
        for (int64_t i = 0; i < width; ++i) dst[i] = last[i] < 0 ? fill : x[base + last[i]];
      }
    }
  };
  parallel_slices(runs, std::max<int64_t>(1, (1 << 16) / width), 1, a.threads, write_runs);
}

// Runs remap in the value's element type; `fill` is converted to it.
void remap_values(const OpArgs& a, const std::vector<AxisMap>& maps, double fill = 0.0) {
  with_element_type(a.out().dtype, [&](auto zero) {
    using T = decltype(zero);
    remap<T>(a, maps, static_cast<T>(fill));
  });
}

// The identity map of every input axis, each scaled by its stride.
std::vector<AxisMap> identity_maps(const Shape& in) {
  const std::vector<int64_t> stride = row_strides(in);
  std::vector<AxisMap> maps(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    for (int64_t i = 0; i < in[d]; ++i) maps[d].push_back(i * stride[d]);
  }
  return maps;
}

}  // namespace

int64_t checked_index(const OpArgs& a, int64_t i, int64_t size) {
  if (i < -size || i >= size) a.fail("index " + std::to_string(i) + " is out of range for an axis of size " + std::to_string(size));
  return i < 0 ? i + size : i;
}

void run_float_reshape(const OpArgs& a) {
  Buffer& in = a.values[a.node.inputs[0]];
  if (a.input_dies && a.node.inputs[0] != a.node.output) {  // nothing reads the input after: its values move
    std::swap(a.out_buf().f, in.f);
    std::swap(a.out_buf().idx, in.idx);
    return;
  }
  a.out_buf().f = in.f;
  a.out_buf().idx = in.idx;
}

void run_float_permute(const OpArgs& a) {
  const Shape& in = a.in().shape;
  const auto& perm = a.node.ints_attr("perm");
  const std::vector<int64_t> stride = row_strides(in);
  std::vector<AxisMap> maps(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const size_t from = normalized_axis(perm[d], in.size());
    for (int64_t i = 0; i < in[from]; ++i) maps[d].push_back(i * stride[from]);
  }
  remap_values(a, maps);
}

// Concatenation along "axis": each input's block of shape[axis] * inner values per outer index.
void run_float_cat(const OpArgs& a) {
  with_element_type(a.out().dtype, [&](auto zero) {
    using T = decltype(zero);
    const Shape& out = a.out().shape;
    const size_t axis = normalized_axis(a.node.int_attr("axis"), out.size());
    const AxisSplit split = split_at_axis(out, axis);
    const int64_t outer = split.outer, length = split.length, inner = split.inner;
    std::vector<T>& y = values_of<T>(a.out_buf());
    y.resize(static_cast<size_t>(a.out_count()));
    int64_t offset = 0;
    for (size_t i = 0; i < a.node.inputs.size(); ++i) {
      const int64_t block = a.in(i).shape[axis] * inner;
      const std::vector<T>& x = values_of<T>(a.in_buf(i));
      for (int64_t o = 0; o < outer; ++o) {
        std::copy(x.begin() + o * block, x.begin() + (o + 1) * block, y.begin() + o * length * inner + offset);
      }
      offset += block;
    }
  });
}

void run_float_slice(const OpArgs& a) {
  const Shape& in = a.in().shape;
  const size_t axis = normalized_axis(a.node.int_attr("axis"), in.size());
  const int64_t begin = a.node.int_attr("begin"), step = a.node.ints.count("step") ? a.node.int_attr("step") : 1;
  std::vector<AxisMap> maps = identity_maps(in);
  const int64_t stride = row_strides(in)[axis];
  maps[axis].clear();
  for (int64_t i = 0; i < a.out().shape[axis]; ++i) maps[axis].push_back((begin + i * step) * stride);
  remap_values(a, maps);
}

void run_float_expand(const OpArgs& a) {
  const Shape &in = a.in().shape, &out = a.out().shape;
  const size_t lead = out.size() - in.size();
  const std::vector<int64_t> stride = row_strides(in);
  std::vector<AxisMap> maps(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    const bool broadcast = d < lead || in[d - lead] == 1;
    for (int64_t i = 0; i < out[d]; ++i) maps[d].push_back(broadcast ? 0 : i * stride[d - lead]);
  }
  remap_values(a, maps);
}

void run_float_flip(const OpArgs& a) {
  const Shape& in = a.in().shape;
  std::vector<AxisMap> maps = identity_maps(in);
  for (int64_t axis : a.node.ints_attr("axes")) {
    AxisMap& m = maps[normalized_axis(axis, in.size())];
    std::reverse(m.begin(), m.end());
  }
  remap_values(a, maps);
}

int64_t float_pad_source_index(int64_t j, int64_t n, int64_t mode) {
  switch (mode) {
    case 1: return j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
    case 2: return std::min(std::max(j, int64_t{0}), n - 1);
    case 3: return ((j % n) + n) % n;
    default: return j < 0 || j >= n ? -1 : j;
  }
}

void run_float_pad(const OpArgs& a) {
  const Shape &in = a.in().shape, &out = a.out().shape;
  const auto& pads = a.node.ints_attr("pads");
  const int64_t mode = a.node.int_attr("mode");
  const std::vector<int64_t> stride = row_strides(in);
  std::vector<AxisMap> maps(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t n = in[d];
    for (int64_t i = 0; i < out[d]; ++i) {
      const int64_t j = float_pad_source_index(i - pads[2 * d], n, mode);
      maps[d].push_back(j < 0 ? -1 : j * stride[d]);
    }
  }
  remap_values(a, maps, a.node.float_attr("value"));
}

void run_float_repeat(const OpArgs& a) {
  const Shape &in = a.in().shape, &out = a.out().shape;
  const size_t lead = out.size() - in.size();
  const std::vector<int64_t> stride = row_strides(in);
  std::vector<AxisMap> maps(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    for (int64_t i = 0; i < out[d]; ++i) maps[d].push_back(d < lead ? 0 : (i % in[d - lead]) * stride[d - lead]);
  }
  remap_values(a, maps);
}

// out[o, j, k] = x[o, index[j], k] for the outer axes o, the index's elements j and the inner axes k.
void run_float_take(const OpArgs& a) {
  const Shape& in = a.in(0).shape;
  const size_t axis = normalized_axis(a.node.int_attr("axis"), in.size());
  const AxisSplit split = split_at_axis(in, axis);
  const int64_t outer = split.outer, length = split.length, inner = split.inner;
  const std::vector<int64_t>& index = a.in_buf(1).idx;
  std::vector<int64_t> rows(index.size());
  for (size_t j = 0; j < index.size(); ++j) rows[j] = checked_index(a, index[j], length);
  with_element_type(a.out().dtype, [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T>& x = values_of<T>(a.in_buf(0));
    std::vector<T>& y = values_of<T>(a.out_buf());
    y.resize(static_cast<size_t>(a.out_count()));
    T* dst = y.data();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t row : rows) {
        const T* src = x.data() + (o * length + row) * inner;
        dst = std::copy(src, src + inner, dst);
      }
    }
  });
}

// torch.gather: out[i] = x[i with its axis coordinate replaced by index[i]].
void run_float_gather(const OpArgs& a) {
  const Shape &in = a.in(0).shape, &shape = a.in(1).shape;
  const size_t axis = normalized_axis(a.node.int_attr("axis"), in.size());
  const std::vector<int64_t> in_stride = row_strides(in);
  const std::vector<int64_t>& index = a.in_buf(1).idx;
  with_element_type(a.out().dtype, [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T>& x = values_of<T>(a.in_buf(0));
    std::vector<T>& y = values_of<T>(a.out_buf());
    y.resize(index.size());
    std::vector<int64_t> at(shape.size(), 0);
    for (size_t e = 0; e < index.size(); ++e) {
      int64_t offset = checked_index(a, index[e], in[axis]) * in_stride[axis];
      for (size_t d = 0; d < shape.size(); ++d) offset += d == axis ? 0 : at[d] * in_stride[d];
      y[e] = x[offset];
      for (size_t d = shape.size(); d-- > 0 && ++at[d] == shape[d];) at[d] = 0;
    }
  });
}

MergedIndex merged_index(const OpArgs& a, size_t first) {
  const Shape& in = a.in(0).shape;
  std::vector<size_t> axes;
  for (int64_t axis : a.node.ints_attr("axes")) axes.push_back(normalized_axis(axis, in.size()));
  MergedIndex m;
  for (size_t d = 0; d < in.size(); ++d) {
    (d < axes.front() ? m.outer : d > axes.back() ? m.inner : m.extent) *= in[d];
  }
  Shape indexed;
  for (size_t j = first; j < a.node.inputs.size(); ++j) {
    const Shape& s = a.in(j).shape;
    Shape b(std::max(indexed.size(), s.size()), 1);
    for (size_t i = 0; i < b.size(); ++i) {
      const int64_t di = i + indexed.size() >= b.size() ? indexed[i + indexed.size() - b.size()] : 1;
      const int64_t ds = i + s.size() >= b.size() ? s[i + s.size() - b.size()] : 1;
      b[i] = std::max(di, ds);
    }
    indexed = b;
  }
  m.indexed = indexed;
  const int64_t count = num_elements(indexed);
  m.rows.assign(static_cast<size_t>(count), 0);
  int64_t stride = m.extent;
  for (size_t j = 0; j < axes.size(); ++j) {
    stride /= in[axes[j]];
    const std::vector<int64_t> s = broadcast_strides(a.in(first + j).shape, indexed.size());
    const std::vector<int64_t>& index = a.in_buf(first + j).idx;
    std::vector<int64_t> at(indexed.size(), 0);
    for (int64_t e = 0; e < count; ++e) {
      int64_t offset = 0;
      for (size_t d = 0; d < indexed.size(); ++d) offset += at[d] * s[d];
      m.rows[e] += checked_index(a, index[offset], in[axes[j]]) * stride;
      for (size_t d = indexed.size(); d-- > 0 && ++at[d] == indexed[d];) at[d] = 0;
    }
  }
  return m;
}

// Advanced indexing on consecutive axes: a take of the rows of the merged indexed axes.
void run_float_index(const OpArgs& a) {
  const MergedIndex m = merged_index(a, 1);
  const int64_t outer = m.outer, extent = m.extent, inner = m.inner;
  const std::vector<int64_t>& rows = m.rows;
  with_element_type(a.out().dtype, [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T>& x = values_of<T>(a.in_buf(0));
    std::vector<T>& y = values_of<T>(a.out_buf());
    y.resize(static_cast<size_t>(a.out_count()));
    T* dst = y.data();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t row : rows) {
        const T* src = x.data() + (o * extent + row) * inner;
        dst = std::copy(src, src + inner, dst);
      }
    }
  });
}

}  // namespace qnnpy
