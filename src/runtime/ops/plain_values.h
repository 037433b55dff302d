// The values of float ops (OpKind::Float) in the runtime: float32 in Buffer::f, int64 / int32 /
// bool widened to int64 in Buffer::idx, all in logical (row-major) order; and the loops the
// element-wise runners share (NumPy broadcasting of any number of inputs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/ops/op_args.h"
#include "runtime/parallel.h"

namespace qnnpy {

template <class T> std::vector<T>& values_of(Buffer& b);
template <> inline std::vector<float>& values_of<float>(Buffer& b) { return b.f; }
template <> inline std::vector<int64_t>& values_of<int64_t>(Buffer& b) { return b.idx; }
template <class T> const std::vector<T>& values_of(const Buffer& b) { return values_of<T>(const_cast<Buffer&>(b)); }

// Calls body(T{}) with T = float for a float32 value, int64_t otherwise: the element type a runner
// of any dtype works in (the body, a generic lambda, takes it as `using T = decltype(zero)`).
template <class Body>
void with_element_type(DType t, Body&& body) {
  if (t == DType::Float32) {
    body(float{});
  } else {
    body(int64_t{});
  }
}

// Element-wise work on `count` elements, split for the workers into spans of about kElementSpan (each element is
// computed alone, so any split gives the same values): calls fn(begin, end) for each span.
constexpr int64_t kElementSpan = 1 << 14;
template <class Fn>
void element_spans(int64_t count, int threads, Fn fn) {
  const int64_t spans = (count + kElementSpan - 1) / kElementSpan;
  parallel_chunks(spans, workers_for(count, 2 * kElementSpan, threads), [&](int64_t span, int) {
    fn(span * kElementSpan, std::min(count, (span + 1) * kElementSpan));
  });
}

// One float32 input to one float32 output of its shape, element by element.
template <class F>
void float_unary(const OpArgs& a, F f) {
  const std::vector<float>& x = a.in_buf().f;
  std::vector<float>& out = a.out_buf().f;
  out.resize(x.size());
  element_spans(static_cast<int64_t>(x.size()), a.threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = f(x[i]);
  });
}

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

// Calls run(e, offsets, steps, n) for runs of n consecutive elements of `out` from element e, in order, with
// offsets[i] the element of input i (shape ins[i], broadcast to `out`) at e and steps[i] its stride along the run.
// Adjacent axes along which every input is contiguous (or broadcast) are merged first and the last merged axis is
// the run: a scalar times a tensor is one run, a row broadcast over a matrix one run per row.
template <size_t N, class Run>
void for_each_broadcast_run(const Shape& out, const Shape* const (&ins)[N], Run run) {
  const int64_t count = num_elements(out);
  if (count == 0) return;
  std::vector<int64_t> extent;
  std::vector<int64_t> strides[N];
  {
    std::vector<int64_t> full[N];
    for (size_t i = 0; i < N; ++i) full[i] = broadcast_strides(*ins[i], out.size());
    for (size_t d = 0; d < out.size(); ++d) {
      if (out[d] == 1) continue;  // an axis of extent 1 moves no offset
      bool merges = !extent.empty();
      for (size_t i = 0; i < N && merges; ++i) merges = strides[i].back() == full[i][d] * out[d];
      if (merges) {
        extent.back() *= out[d];
        for (size_t i = 0; i < N; ++i) strides[i].back() = full[i][d];
      } else {
        extent.push_back(out[d]);
        for (size_t i = 0; i < N; ++i) strides[i].push_back(full[i][d]);
      }
    }
  }
  if (extent.empty()) {  // a single element
    extent.push_back(1);
    for (size_t i = 0; i < N; ++i) strides[i].push_back(0);
  }
  const size_t last = extent.size() - 1;
  int64_t steps[N], base[N] = {};
  for (size_t i = 0; i < N; ++i) steps[i] = strides[i][last];
  std::vector<int64_t> index(last, 0);
  for (int64_t e = 0; e < count; e += extent[last]) {
    run(e, static_cast<const int64_t*>(base), static_cast<const int64_t*>(steps), extent[last]);
    for (size_t d = last; d-- > 0;) {  // the next run: the outer index and the offsets moved along
      for (size_t i = 0; i < N; ++i) base[i] += strides[i][d];
      if (++index[d] < extent[d]) break;
      for (size_t i = 0; i < N; ++i) base[i] -= strides[i][d] * extent[d];
      index[d] = 0;
    }
  }
}

// for_each_broadcast_run on the workers: the runs cut into pieces of at most kElementSpan elements, handed out
// in groups of about that many elements (a large tensor's runs in any order; each element computed alone).
template <size_t N, class Run>
void for_each_broadcast_run_parallel(const Shape& out, const Shape* const (&ins)[N], int threads, Run run) {
  const int64_t count = num_elements(out);
  const int workers = workers_for(count, 2 * kElementSpan, threads);
  if (workers <= 1) return for_each_broadcast_run(out, ins, run);
  struct Piece {
    int64_t e, n, o[N];
  };
  std::vector<Piece> pieces;
  int64_t steps[N] = {};
  for_each_broadcast_run(out, ins, [&](int64_t e, const int64_t* o, const int64_t* step, int64_t n) {
    for (size_t i = 0; i < N; ++i) steps[i] = step[i];  // the same for every run
    for (int64_t j = 0; j < n; j += kElementSpan) {
      Piece p{e + j, std::min(kElementSpan, n - j), {}};
      for (size_t i = 0; i < N; ++i) p.o[i] = o[i] + j * step[i];
      pieces.push_back(p);
    }
  });
  std::vector<size_t> group_start{0};
  for (size_t k = 0, size = 0; k < pieces.size(); ++k) {
    size += static_cast<size_t>(pieces[k].n);
    if (size >= static_cast<size_t>(kElementSpan) && k + 1 < pieces.size()) group_start.push_back(k + 1), size = 0;
  }
  group_start.push_back(pieces.size());
  parallel_chunks(static_cast<int64_t>(group_start.size()) - 1, workers, [&](int64_t g, int) {
    for (size_t k = group_start[g]; k < group_start[g + 1]; ++k) {
      run(pieces[k].e, static_cast<const int64_t*>(pieces[k].o), static_cast<const int64_t*>(steps), pieces[k].n);
    }
  });
}

// Calls f(out_index, offsets) for every element of `out`, in order (for_each_broadcast_run, element by element).
template <size_t N, class F>
void for_each_broadcast(const Shape& out, const Shape* const (&ins)[N], F f) {
  for_each_broadcast_run(out, ins, [&](int64_t e, const int64_t* base, const int64_t* steps, int64_t n) {
    int64_t offsets[N];
    for (size_t i = 0; i < N; ++i) offsets[i] = base[i];
    for (int64_t j = 0; j < n; ++j) {
      f(e + j, static_cast<const int64_t*>(offsets));
      for (size_t i = 0; i < N; ++i) offsets[i] += steps[i];
    }
  });
}

// A possibly negative axis of a value of rank `rank`, made non-negative (the op's rule checked its range).
inline size_t normalized_axis(int64_t axis, size_t rank) {
  return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

// Row-major strides of a shape.
inline std::vector<int64_t> row_strides(const Shape& s) {
  std::vector<int64_t> stride(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) stride[d - 1] = stride[d] * s[d];
  return stride;
}

}  // namespace qnnpy
