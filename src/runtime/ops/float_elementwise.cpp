#include "runtime/ops/float_elementwise.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/integer_values.h"
#include "runtime/ops/plain_values.h"

namespace qnnpy {
namespace {

template <class In, class Out, class F>
void map_values(const OpArgs& a, F f) {
  const std::vector<In>& x = values_of<In>(a.in_buf());
  std::vector<Out>& y = values_of<Out>(a.out_buf());
  y.resize(x.size());
  element_spans(static_cast<int64_t>(x.size()), a.threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = f(x[i]);
  });
}

template <class In, class Out, class F>
void map_broadcast(const OpArgs& a, F f) {
  const std::vector<In>&x = values_of<In>(a.in_buf(0)), &y = values_of<In>(a.in_buf(1));
  std::vector<Out>& out = values_of<Out>(a.out_buf());
  out.resize(static_cast<size_t>(a.out_count()));
  const Shape* const shapes[2] = {&a.in(0).shape, &a.in(1).shape};
  for_each_broadcast(a.out().shape, shapes, [&](int64_t e, const int64_t* o) { out[e] = f(x[o[0]], y[o[1]]); });
}

// A float32 value converted to an integer dtype: truncated toward zero, saturated at the type's
// range (NaN gives 0), so no conversion is undefined.
int64_t float_to_integer(float v, DType to) {
  if (std::isnan(v)) return 0;
  if (to == DType::Int32) {
    if (v >= 2147483648.0f) return INT32_MAX;
    if (v <= -2147483648.0f) return INT32_MIN;
  }
  if (v >= 9223372036854775808.0f) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0f) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

const char* ElementwiseUnary::run(const OpArgs& a) const {
  const bool bool_out = a.out().dtype == DType::Bool;
  if (a.in().dtype == DType::Float32) {
    if (bool_out) {
      map_values<float, int64_t>(a, f_.float_test);
    } else {
      map_values<float, float>(a, f_.on_float);
    }
  } else {
    map_values<int64_t, int64_t>(a, f_.on_integer);
  }
  return "";
}

const char* ElementwiseBinary::run(const OpArgs& a) const {
  const bool bool_out = a.out().dtype == DType::Bool;
  if (a.in(0).dtype == DType::Float32) {
    if (bool_out) {
      map_broadcast<float, int64_t>(a, f_.float_test);
    } else if (f_.float_runs) {
      const std::vector<float>&x = a.in_buf(0).f, &y = a.in_buf(1).f;
      std::vector<float>& out = a.out_buf().f;
      out.resize(static_cast<size_t>(a.out_count()));
      const Shape* const shapes[2] = {&a.in(0).shape, &a.in(1).shape};
      for_each_broadcast_run_parallel(a.out().shape, shapes, a.threads,
                                      [&](int64_t e, const int64_t* o, const int64_t* step, int64_t n) {
                                        f_.float_runs(x.data() + o[0], step[0], y.data() + o[1], step[1], out.data() + e, n);
                                      });
    } else {
      map_broadcast<float, float>(a, f_.on_float);
    }
  } else {
    map_broadcast<int64_t, int64_t>(a, f_.on_integer);
  }
  return "";
}

void run_float_where(const OpArgs& a) {
  with_element_type(a.out().dtype, [&](auto zero) {
    using T = decltype(zero);
    const std::vector<int64_t>& c = a.in_buf(0).idx;
    const std::vector<T>&x = values_of<T>(a.in_buf(1)), &y = values_of<T>(a.in_buf(2));
    std::vector<T>& out = values_of<T>(a.out_buf());
    out.resize(static_cast<size_t>(a.out_count()));
    const Shape* const shapes[3] = {&a.in(0).shape, &a.in(1).shape, &a.in(2).shape};
    for_each_broadcast(a.out().shape, shapes, [&](int64_t e, const int64_t* o) { out[e] = c[o[0]] ? x[o[1]] : y[o[2]]; });
  });
}

void run_float_cast(const OpArgs& a) {
  const DType from = a.in().dtype, to = a.out().dtype;
  if (from == DType::Float32 && to == DType::Float32) {
    a.out_buf().f = a.in_buf().f;
  } else if (from == DType::Float32) {
    map_values<float, int64_t>(a, [to](float v) -> int64_t { return to == DType::Bool ? v != 0.0f : float_to_integer(v, to); });
  } else if (to == DType::Float32) {
    map_values<int64_t, float>(a, [](int64_t v) { return static_cast<float>(v); });
  } else {  // between integer dtypes: wrap to the narrower type as PyTorch's conversion does
    map_values<int64_t, int64_t>(a, [to](int64_t v) -> int64_t {
      if (to == DType::Bool) return v != 0;
      return to == DType::Int32 ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v))) : v;
    });
  }
}

void run_float_constant(const OpArgs& a) {
  const Param& p = a.graph.node_param(a.node, "value");
  const size_t count = static_cast<size_t>(num_elements(p.shape));
  if (p.dtype == DType::Float32) {
    a.out_buf().f.assign(p.data<float>(), p.data<float>() + count);
  } else {
    a.out_buf().idx = widen_integers(p.data<uint8_t>(), count, p.dtype);
  }
}

}  // namespace qnnpy
