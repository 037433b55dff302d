#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "runtime/ops/float_reduce_runners.h"
#include "runtime/ops/plain_values.h"

namespace qnnpy {
namespace {

// For every input element in order, the offset of the output element it reduces into (the
// reduced axes contribute nothing).
std::vector<int64_t> reduction_targets(const Shape& in, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(in.size(), axes.empty());
  for (int64_t a : axes) reduced[normalized_axis(a, in.size())] = true;
  std::vector<int64_t> stride(in.size(), 0);
  int64_t s = 1;
  for (size_t d = in.size(); d-- > 0;) {
    if (!reduced[d]) {
      stride[d] = s;
      s *= in[d];
    }
  }
  std::vector<int64_t> targets(static_cast<size_t>(num_elements(in)));
  std::vector<int64_t> at(in.size(), 0);
  for (size_t e = 0; e < targets.size(); ++e) {
    int64_t offset = 0;
    for (size_t d = 0; d < in.size(); ++d) offset += at[d] * stride[d];
    targets[e] = offset;
    for (size_t d = in.size(); d-- > 0 && ++at[d] == in[d];) at[d] = 0;
  }
  return targets;
}

// Whether the reduced axes are the last ones (every axis when `axes` is empty): each output then reduces one
// contiguous run of the input.
bool reduces_trailing_axes(const Shape& in, const std::vector<int64_t>& axes) {
  if (axes.empty()) return true;
  std::vector<bool> reduced(in.size(), false);
  for (int64_t a : axes) reduced[normalized_axis(a, in.size())] = true;
  size_t d = in.size();
  while (d > 0 && reduced[d - 1]) --d;
  return std::none_of(reduced.begin(), reduced.begin() + static_cast<std::ptrdiff_t>(d), [](bool r) { return r; });
}

template <class T>
void min_max(const OpArgs& a, const std::vector<int64_t>& targets, bool is_max) {
  const std::vector<T>& x = values_of<T>(a.in_buf());
  std::vector<T>& y = values_of<T>(a.out_buf());
  y.assign(static_cast<size_t>(a.out_count()), is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
  std::vector<bool> seen(y.size(), false);
  for (size_t e = 0; e < x.size(); ++e) {
    T& acc = y[targets[e]];
    if (!seen[targets[e]]) {
      acc = x[e];
      seen[targets[e]] = true;
    } else if constexpr (std::is_floating_point_v<T>) {  // NaN propagates, as torch.amax does
      if (!std::isnan(acc) && (std::isnan(x[e]) || (is_max ? x[e] > acc : x[e] < acc))) acc = x[e];
    } else if (is_max ? x[e] > acc : x[e] < acc) {
      acc = x[e];
    }
  }
}

}  // namespace

void run_float_reduce(const OpArgs& a) {
  const std::string& op = a.node.op;
  // Float sums, means, products and variances over the last axes take a loop of their own (below).
  const bool arithmetic = a.in().dtype == DType::Float32 && op != "float_amax" && op != "float_amin" && op != "float_any";
  const bool trailing = arithmetic && reduces_trailing_axes(a.in().shape, a.node.ints_attr("axes"));
  const std::vector<int64_t> targets = trailing ? std::vector<int64_t>{} : reduction_targets(a.in().shape, a.node.ints_attr("axes"));
  const size_t count = static_cast<size_t>(a.out_count());
  const double per_output = static_cast<double>(num_elements(a.in().shape)) / static_cast<double>(count);
  if (op == "float_amax" || op == "float_amin") {
    with_element_type(a.out().dtype, [&](auto zero) { min_max<decltype(zero)>(a, targets, op == "float_amax"); });
    return;
  }
  if (op == "float_any") {
    std::vector<int64_t>& y = a.out_buf().idx;
    y.assign(count, 0);
    if (a.in().dtype == DType::Float32) {
      for (size_t e = 0; e < targets.size(); ++e) y[targets[e]] |= a.in_buf().f[e] != 0.0f;
    } else {
      for (size_t e = 0; e < targets.size(); ++e) y[targets[e]] |= a.in_buf().idx[e] != 0;
    }
    return;
  }
  if (a.in().dtype != DType::Float32) {  // integer sums and products, wrapping in uint64
    std::vector<uint64_t> acc(count, op == "float_prod" ? 1 : 0);
    const std::vector<int64_t>& x = a.in_buf().idx;
    for (size_t e = 0; e < x.size(); ++e) {
      uint64_t& r = acc[targets[e]];
      r = op == "float_prod" ? r * static_cast<uint64_t>(x[e]) : r + static_cast<uint64_t>(x[e]);
    }
    a.out_buf().idx.assign(acc.begin(), acc.end());
    return;
  }
  const std::vector<float>& x = a.in_buf().f;
  std::vector<double> acc(count, op == "float_prod" ? 1.0 : 0.0);
  const size_t length = x.size() / count;  // of each output's run, where `trailing`
  if (trailing) {
    // Each output reduces one contiguous run: the same adds in the same order, without the targets' lookups.
    for (size_t r = 0; r < count; ++r) {
      const float* row = x.data() + r * length;
      double v = acc[r];
      if (op == "float_prod") {
        for (size_t i = 0; i < length; ++i) v *= row[i];
      } else {
        for (size_t i = 0; i < length; ++i) v += row[i];
      }
      acc[r] = v;
    }
  } else {
    for (size_t e = 0; e < x.size(); ++e) {
      double& r = acc[targets[e]];
      r = op == "float_prod" ? r * x[e] : r + x[e];
    }
  }
  if (op == "float_mean" || op == "float_var") {
    for (double& r : acc) r /= per_output;
  }
  if (op == "float_var") {  // the mean's squared deviations, divided by count - correction
    std::vector<double> squares(count, 0.0);
    for (size_t e = 0; e < x.size(); ++e) {
      const size_t t = trailing ? e / length : static_cast<size_t>(targets[e]);
      const double d = x[e] - acc[t];
      squares[t] += d * d;
    }
    const double divisor = std::max(per_output - a.node.float_attr("correction"), 0.0);
    for (size_t i = 0; i < count; ++i) acc[i] = squares[i] / divisor;
  }
  a.out_buf().f.assign(acc.begin(), acc.end());
}

void run_float_arg_reduce(const OpArgs& a) {
  const Shape& in = a.in().shape;
  const auto& axis_attr = a.node.ints_attr("axis");
  // Over one axis: outer x length x inner; over the flattened input: one row of all elements.
  const size_t axis = axis_attr.empty() ? 0 : normalized_axis(axis_attr[0], in.size());
  int64_t length = num_elements(in), inner = 1;
  if (!axis_attr.empty()) {
    length = in[axis];
    for (size_t d = axis + 1; d < in.size(); ++d) inner *= in[d];
  }
  const int64_t outer = num_elements(in) / (length * inner);
  const bool is_max = a.node.op == "float_argmax";
  std::vector<int64_t>& y = a.out_buf().idx;
  y.assign(static_cast<size_t>(outer * inner), 0);
  with_element_type(a.in().dtype, [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T>& x = values_of<T>(a.in_buf());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* v = x.data() + o * length * inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < length; ++k) {
          const T cur = v[k * inner], top = v[best * inner];
          bool better = is_max ? cur > top : cur < top;
          if constexpr (std::is_floating_point_v<T>) better = !std::isnan(top) && (std::isnan(cur) || better);
          if (better) best = k;
        }
        y[o * inner + i] = best;
      }
    }
  });
}

void run_float_cumsum(const OpArgs& a) {
  const Shape& in = a.in().shape;
  const size_t axis = normalized_axis(a.node.int_attr("axis"), in.size());
  const AxisSplit split = split_at_axis(in, axis);
  const int64_t outer = split.outer, length = split.length, inner = split.inner;
  auto scan = [&](const auto& x, auto& y, auto acc0) {
    y.resize(x.size());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        auto acc = acc0;
        for (int64_t k = 0; k < length; ++k) {
          const int64_t e = (o * length + k) * inner + i;
          acc += x[e];
          y[e] = static_cast<std::remove_reference_t<decltype(y[0])>>(acc);
        }
      }
    }
  };
  if (a.in().dtype == DType::Float32) {
    scan(a.in_buf().f, a.out_buf().f, 0.0);
  } else {
    scan(a.in_buf().idx, a.out_buf().idx, uint64_t{0});  // wrapping, as int64 sums do
  }
}

void run_float_log_softmax(const OpArgs& a) {
  const Shape& shape = a.in().shape;
  const size_t axis = normalized_axis(a.node.int_attr("axis"), shape.size());
  const AxisSplit split = split_at_axis(shape, axis);
  const int64_t outer = split.outer, length = split.length, inner = split.inner;
  const std::vector<float>& x = a.in_buf().f;
  std::vector<float>& y = a.out_buf().f;
  y.resize(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * length * inner + i;
      float m = x[base];
      for (int64_t k = 1; k < length; ++k) m = std::max(m, x[base + k * inner]);
      float sum = 0.0f;
      for (int64_t k = 0; k < length; ++k) sum += std::exp(x[base + k * inner] - m);
      const float shift = m + std::log(sum);
      for (int64_t k = 0; k < length; ++k) y[base + k * inner] = x[base + k * inner] - shift;
    }
  }
}

}  // namespace qnnpy
