#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/ops/float_movement_runners.h"
#include "runtime/ops/float_scatter_runners.h"
#include "runtime/ops/plain_values.h"

namespace qnnpy {
namespace {

enum Reduce { kReplace = 0, kSum, kProd, kMean, kMax, kMin };

template <class T>
T identity(int64_t reduce) {
  switch (reduce) {
    case kProd: return T(1);
    case kMax: return std::numeric_limits<T>::lowest();
    case kMin: return std::numeric_limits<T>::max();
    default: return T(0);
  }
}

template <class T>
T reduced(int64_t reduce, T acc, T v) {
  switch (reduce) {
    case kSum:
    case kMean: return acc + v;
    case kProd: return acc * v;
    case kMax: return std::max(acc, v);
    case kMin: return std::min(acc, v);
    default: return v;
  }
}

}  // namespace

void run_float_scatter(const OpArgs& a) {
  const Shape &in = a.in(0).shape, &index_shape = a.in(1).shape, &src_shape = a.in(2).shape;
  const size_t axis = normalized_axis(a.node.int_attr("axis"), in.size());
  const int64_t reduce = a.node.int_attr("reduce");
  const bool include_self = a.node.int_attr("include_self") != 0;
  const std::vector<int64_t> in_stride = row_strides(in), src_stride = row_strides(src_shape);
  const std::vector<int64_t>& index = a.in_buf(1).idx;
  // The output position and the src element of every index element, in row-major order.
  std::vector<int64_t> position(index.size()), source(index.size());
  std::vector<int64_t> at(index_shape.size(), 0);
  for (size_t e = 0; e < index.size(); ++e) {
    int64_t p = 0, q = 0;
    for (size_t d = 0; d < at.size(); ++d) {
      p += (d == axis ? checked_index(a, index[e], in[axis]) : at[d]) * in_stride[d];
      q += at[d] * src_stride[d];
    }
    position[e] = p, source[e] = q;
    for (size_t d = at.size(); d-- > 0 && ++at[d] == index_shape[d];) at[d] = 0;
  }
  with_element_type(a.out().dtype, [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T>& src = values_of<T>(a.in_buf(2));
    std::vector<T>& out = values_of<T>(a.out_buf());
    out = values_of<T>(a.in_buf(0));
    std::vector<int64_t> count(out.size(), include_self ? 1 : 0);
    if (reduce != kReplace && !include_self) {
      for (int64_t p : position) out[p] = identity<T>(reduce);
    }
    for (size_t e = 0; e < position.size(); ++e) {
      out[position[e]] = reduced<T>(reduce, out[position[e]], src[source[e]]);
      ++count[position[e]];
    }
    if (reduce == kMean) {
      std::vector<bool> divided(out.size(), false);
      for (int64_t p : position) {
        if (!divided[p]) out[p] = static_cast<T>(out[p] / static_cast<T>(count[p]));
        divided[p] = true;
      }
    }
  });
}

void run_float_index_put(const OpArgs& a) {
  const MergedIndex m = merged_index(a, 2);
  const bool accumulate = a.node.int_attr("accumulate") != 0;
  // The values broadcast to the indexed shape: the input's axes around the index tensors' broadcast shape.
  const Shape& values_shape = a.in(1).shape;
  const Shape& in = a.in(0).shape;
  std::vector<int64_t> axes;
  for (int64_t axis : a.node.ints_attr("axes")) axes.push_back(static_cast<int64_t>(normalized_axis(axis, in.size())));
  Shape full(in.begin(), in.begin() + axes.front());
  full.insert(full.end(), m.indexed.begin(), m.indexed.end());
  full.insert(full.end(), in.begin() + axes.back() + 1, in.end());
  const std::vector<int64_t> value_stride = broadcast_strides(values_shape, full.size());
  with_element_type(a.out().dtype, [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T>& values = values_of<T>(a.in_buf(1));
    std::vector<T>& out = values_of<T>(a.out_buf());
    out = values_of<T>(a.in_buf(0));
    std::vector<int64_t> at(full.size(), 0);
    const int64_t count = num_elements(full);
    const size_t lead = static_cast<size_t>(axes.front()), index_rank = m.indexed.size();
    for (int64_t e = 0; e < count; ++e) {
      int64_t v = 0, outer = 0, row = 0, inner = 0;
      for (size_t d = 0; d < full.size(); ++d) v += at[d] * value_stride[d];
      for (size_t d = 0; d < lead; ++d) outer = outer * full[d] + at[d];
      for (size_t d = lead; d < lead + index_rank; ++d) row = row * full[d] + at[d];
      for (size_t d = lead + index_rank; d < full.size(); ++d) inner = inner * full[d] + at[d];
      T& dst = out[(outer * m.extent + m.rows[row]) * m.inner + inner];
      dst = accumulate ? static_cast<T>(dst + values[v]) : values[v];
      for (size_t d = full.size(); d-- > 0 && ++at[d] == full[d];) at[d] = 0;
    }
  });
}

void run_float_topk(const OpArgs& a) {
  const Shape& in = a.in().shape;
  const size_t axis = normalized_axis(a.node.int_attr("axis"), in.size());
  const int64_t k = a.node.int_attr("k");
  const bool largest = a.node.int_attr("largest") != 0, want_indices = a.node.int_attr("indices") != 0;
  const AxisSplit split = split_at_axis(in, axis);
  const int64_t outer = split.outer, length = split.length, inner = split.inner;
  with_element_type(a.in().dtype, [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T>& x = values_of<T>(a.in_buf());
    auto nan = [](T v) {
      if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
      return false;
    };
    // a before b: the larger (smaller) value first, NaN as the largest.
    auto before = [&](T u, T v) {
      if (nan(u) || nan(v)) return largest ? nan(u) && !nan(v) : !nan(u) && nan(v);
      return largest ? u > v : u < v;
    };
    std::vector<int64_t> order(static_cast<size_t>(length));
    std::vector<T> values(static_cast<size_t>(outer * k * inner));
    std::vector<int64_t> positions(values.size());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = x.data() + o * length * inner + i;
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return before(row[p * inner], row[q * inner]); });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t dst = (o * k + j) * inner + i;
          values[dst] = row[order[j] * inner];
          positions[dst] = order[j];
        }
      }
    }
    if (want_indices) {
      a.out_buf().idx = std::move(positions);
    } else {
      values_of<T>(a.out_buf()) = std::move(values);
    }
  });
}

}  // namespace qnnpy
