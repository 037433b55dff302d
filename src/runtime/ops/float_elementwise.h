// Runners of the element-wise float ops (src/ops/float_unary.cpp, float_binary.cpp): the
// function of each op comes from its op table entry; the loops walk the values in logical order
// (runtime/ops/plain_values.h), float32 in Buffer::f, int64 / int32 / bool in Buffer::idx.
#pragma once

#include <cstdint>

#include "runtime/prepared_op.h"

namespace qnnpy {

// One input. A float32 input takes `on_float` (float32 out) or `float_test` (bool out); an integer
// or bool input `on_integer` (its own dtype out, or bool when the node's output is bool).
struct UnaryFunctions {
  float (*on_float)(float) = nullptr;
  int64_t (*float_test)(float) = nullptr;
  int64_t (*on_integer)(int64_t) = nullptr;
};

class ElementwiseUnary final : public PreparedOp {
 public:
  explicit ElementwiseUnary(UnaryFunctions f) : f_(f) {}
  const char* run(const OpArgs& a) const override;

 private:
  UnaryFunctions f_;
};

// Two inputs of one dtype, broadcast (NumPy's rule). Float32 inputs take `on_float` (float32 out)
// or `float_test` (bool out); integer or bool inputs `on_integer`.
// `float_runs`, where an op has it, computes on_float over a run of n elements, x and y stepping by sx and sy (0 or
// more): the same values, in one loop the compiler can vectorize (binary_runs below).
using FloatRuns = void (*)(const float* x, int64_t sx, const float* y, int64_t sy, float* out, int64_t n);
struct BinaryFunctions {
  float (*on_float)(float, float) = nullptr;
  int64_t (*float_test)(float, float) = nullptr;
  int64_t (*on_integer)(int64_t, int64_t) = nullptr;
  FloatRuns float_runs = nullptr;
};

// FloatRuns of Op::apply(float, float), with loops of their own for the steps a broadcast mostly takes.
template <class Op>
void binary_runs(const float* x, int64_t sx, const float* y, int64_t sy, float* out, int64_t n) {
  if (sx == 1 && sy == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = Op::apply(x[i], y[i]);
  } else if (sx == 1 && sy == 0) {
    const float b = *y;
    for (int64_t i = 0; i < n; ++i) out[i] = Op::apply(x[i], b);
  } else if (sx == 0 && sy == 1) {
    const float a = *x;
    for (int64_t i = 0; i < n; ++i) out[i] = Op::apply(a, y[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = Op::apply(x[i * sx], y[i * sy]);
  }
}

class ElementwiseBinary final : public PreparedOp {
 public:
  explicit ElementwiseBinary(BinaryFunctions f) : f_(f) {}
  const char* run(const OpArgs& a) const override;

 private:
  BinaryFunctions f_;
};

// float_where: condition (bool), then the two branches, broadcast.
void run_float_where(const OpArgs& a);
// float_cast: to the output's dtype. Float to integer truncates toward zero (out-of-range values
// saturate, NaN gives 0, where C++'s conversion is undefined); any value to bool tests != 0.
void run_float_cast(const OpArgs& a);
// float_constant: its param "value".
void run_float_constant(const OpArgs& a);

}  // namespace qnnpy
