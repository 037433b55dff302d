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
struct BinaryFunctions {
  float (*on_float)(float, float) = nullptr;
  int64_t (*float_test)(float, float) = nullptr;
  int64_t (*on_integer)(int64_t, int64_t) = nullptr;
};

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
