// Runs conv2d and linear nodes on their prepared (packed) weights.
#pragma once

#include <mutex>

#include "runtime/prepared_op.h"
#include "runtime/ops/op_args.h"
#include "runtime/prepared_layer.h"

namespace qnnpy {

// Depthwise convs use the direct depthwise kernels: over quads of interleaved rows where the
// kernel set prefers them (KernelSet::depthwise_quads_faster) and the layer has them (stride 1, uint8
// input, int8 weights), depthwise_row otherwise; 3x3 stride-1 convs integer Winograd
// where the kernel set prefers it (KernelSet::winograd_faster) and the layer allows it;
// all others a GEMM in tasks of rows (and, when rows are few, column blocks) split over
// up to a.threads workers: one per 2^19 multiply-adds (GEMM) or 100 * 2^10 (depthwise),
// at least one. The GEMM is uint8 x int8 when the layer has that path and this input
// cannot saturate its int16 pair sums (its rows read in place for convs where the kernel
// set can, im2col copies otherwise), exact int16 otherwise. Returns the kernel used:
// "depthwise_quads", "depthwise", "winograd", "gemm_u8s8_runs" (rows in place, a run per kernel row),
// "gemm_u8s8_columns" (one run of window columns), "gemm_u8s8" or "gemm_s16", the u8 x s8 ones with
// "_requantized" where the kernel set fused the requantization into the GEMM. `spatial`: a
// conv2d node (NCHW input), otherwise a linear one (rows of the logical shape's last axis, also
// for a rank-4 input, which the runtime stores NHWC).
// With `to_float` (a layer prepared by prepare_float_output_layer), the accumulators are not
// requantized but scaled to float32 into the output's Buffer::f (NCHW for a conv, rows for a
// linear): y = fl(fl(float(acc) * scale[c]) + bias[c]), acc the exact sum (x - zx)(w - zw).
struct FloatOutput {
  const float* scale;  // s_x * s_w[c] per output channel
  const float* bias;   // the float bias per output channel (zeros without one)
};
const char* run_weighted(const OpArgs& a, const PreparedLayer& L, bool spatial, const FloatOutput* to_float = nullptr);

// A conv2d or linear node with its weights prepared once; a conv2d's Winograd weights at its first
// run on a kernel set that uses them (a runner belongs to one executor, so to one kernel set).
class LayerRunner final : public PreparedOp {
 public:
  LayerRunner(const Graph& g, const Node& n, Profile profile, bool spatial)
      : layer_(prepare_layer(g, n, profile)), spatial_(spatial) {}
  const char* run(const OpArgs& a) const override {
    if (spatial_ && a.k.winograd_faster) std::call_once(winograd_once_, [&] { prepare_winograd(a.graph, a.node, layer_); });
    return run_weighted(a, layer_, spatial_);
  }

 private:
  mutable PreparedLayer layer_;
  mutable std::once_flag winograd_once_;
  bool spatial_;
};

}  // namespace qnnpy
