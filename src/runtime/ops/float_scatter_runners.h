// Runners of the float ops that write values at computed positions or order them
// (src/ops/float_scatter.cpp), for float32 and the integer dtypes.
#pragma once

#include "runtime/ops/op_args.h"

namespace qnnpy {

// torch.scatter_reduce: the index's elements in row-major order, each writing or reducing its src
// element into the input's copy at its position (the last write wins for "replace", as PyTorch's CPU
// kernel does); a mean divides by the count of values reduced (the input's own one included with
// include_self).
void run_float_scatter(const OpArgs& a);
// x[..., i, j, ...] = values (or += with accumulate), the index tensors broadcast together, the values
// broadcast to the indexed shape; a position written twice keeps the last value.
void run_float_index_put(const OpArgs& a);
// The k largest (or smallest) values along the axis, or their positions, in order; equal values keep
// their order along the axis, and NaN counts as the largest value, as in torch.topk / torch.sort.
void run_float_topk(const OpArgs& a);

}  // namespace qnnpy
