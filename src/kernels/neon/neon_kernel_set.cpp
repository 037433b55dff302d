// The two AArch64 kernel sets: NEON, and NEON with the u8 x s8 GEMM on sdot (dot-product extension).
#include "kernels/neon/neon_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

const KernelSet& neon_kernels() {
  static const KernelSet k = {gemm_s16_neon,   requantize_neon,  depthwise_row_neon, quantize_neon,
                              dequantize_neon,  add_float_neon,  add_fixed_neon,     relu_neon,
                              max_pool2d_neon,  adaptive_avg_pool2d_neon, lookup_neon, mul_neon,
                              avg_pool2d_neon,  batch_norm_neon, gemm_u8s8_neon,    clamp_u8_neon,
                              false,            nullptr,          nullptr,             winograd_input_scalar,
                              winograd_output_scalar, false,   nullptr,
                              nullptr,          false,           interleave_planes_scalar, nullptr,
                              nullptr,          add_group_sums_scalar, int4_group_sums_scalar,
                              float_dots_scalar, weighted_rows_scalar};
  return k;
}

const KernelSet& neon_dot_kernels() {
  static const KernelSet k = [] {
    KernelSet s = neon_kernels();
    s.gemm_u8s8 = gemm_u8s8_neon_dot;
    return s;
  }();
  return k;
}

}  // namespace qnnpy
