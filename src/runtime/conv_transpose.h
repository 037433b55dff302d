// conv_transpose2d, run as the equivalent stride-1 conv2d: the input is spread out
// by the stride with the zero point between and around its values (they add
// (zx - zx) * w = 0 to every sum), and the kernel is flipped with its in/out axes
// swapped. The int32 sums equal the transposed conv's exactly; requantization is conv2d's.
#pragma once

#include "ir/graph.h"
#include "runtime/prepared_op.h"
#include "runtime/ops/op_args.h"
#include "runtime/prepared_layer.h"

namespace qnnpy {

class TransposedConv final : public PreparedOp {
 public:
  TransposedConv(const Graph& g, const Node& n, Profile profile);
  // Returns the conv kernel that ran (see run_weighted).
  const char* run(const OpArgs& a) const override;

 private:
  Graph conv_;           // spread input -> conv2d with the flipped weight
  int input_ = -1;       // the conv's quantized input value in conv_
  PreparedLayer layer_;
  int64_t stride_h_ = 1, stride_w_ = 1, top_ = 0, left_ = 0;
};

}  // namespace qnnpy
