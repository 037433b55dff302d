// Runners of the float reductions (src/ops/float_reduce.cpp). Float32 sums, means, variances and
// cumulative sums accumulate in double, as PyTorch's CPU kernels accumulate in at least float
// precision (in another order: results may differ from PyTorch's in the last bit).
#pragma once

#include "runtime/ops/op_args.h"

namespace qnnpy {

// float_sum, float_prod, float_mean, float_amax, float_amin, float_var, float_any.
void run_float_reduce(const OpArgs& a);
// float_argmax, float_argmin: the first index of the extreme; NaN counts as the extreme.
void run_float_arg_reduce(const OpArgs& a);
void run_float_cumsum(const OpArgs& a);
// x - max - log(sum(exp(x - max))) along the axis, the formula of PyTorch's CPU kernel.
void run_float_log_softmax(const OpArgs& a);

}  // namespace qnnpy
