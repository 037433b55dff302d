// CPU feature detection, ISA selection, and the shared helpers of both kernel sets.
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

Isa parse_isa(const std::string& name) {
  if (name == "scalar") return Isa::Scalar;
  if (name == "avx2") {
    if (!cpu_has_avx2()) throw std::invalid_argument("isa 'avx2' requested but this CPU has no AVX2+FMA");
    return Isa::Avx2;
  }
  if (name == "auto" || name.empty()) return cpu_has_avx2() ? Isa::Avx2 : Isa::Scalar;
  throw std::invalid_argument("unknown isa '" + name + "' (expected auto, scalar or avx2)");
}

Isa default_isa() {
  const char* env = std::getenv("QNNPY_ISA");
  return parse_isa(env ? env : "auto");
}

const char* isa_name(Isa isa) { return isa == Isa::Avx2 ? "avx2" : "scalar"; }

int64_t packed_b_size(int64_t k, int64_t n) {
  const int64_t kp = (k + 1) / 2 * 2, np = (n + kGemmNR - 1) / kGemmNR * kGemmNR;
  return kp * np;
}

void pack_b(const int16_t* b, int64_t k, int64_t n, int16_t* packed) {
  const int64_t pairs = (k + 1) / 2, blocks = (n + kGemmNR - 1) / kGemmNR;
  for (int64_t nb = 0; nb < blocks; ++nb)
    for (int64_t p = 0; p < pairs; ++p)
      for (int64_t j = 0; j < kGemmNR; ++j)
        for (int64_t h = 0; h < 2; ++h) {
          const int64_t row = 2 * p + h, col = nb * kGemmNR + j;
          packed[((nb * pairs + p) * kGemmNR + j) * 2 + h] = (row < k && col < n) ? b[row * n + col] : 0;
        }
}

float adaptive_multiplier(const AdaptivePoolParams& p, int64_t kh, int64_t kw) {
  switch (p.rule) {
    case AvgPoolRule::FbgemmNhwc: {
      // quantize_val(1.0f / m, zp, acc) multiplies by 1.0f / float(1.0f / m).
      const float m = (p.in_scale / p.out_scale) / static_cast<float>(kh * kw);
      return 1.0f / (1.0f / m);
    }
    case AvgPoolRule::FbgemmNchw:
      return (1.0f / static_cast<float>(kh)) / static_cast<float>(kw);
    case AvgPoolRule::Qnnpack:
      return p.in_scale / (p.out_scale * static_cast<float>(kh * kw));
  }
  throw std::logic_error("unknown average-pool rule");
}

std::pair<float, float> avg_pool2d_multipliers(AvgPool2dRule rule, int64_t divisor) {
  if (rule == AvgPool2dRule::Qnnpack) throw std::logic_error("the Qnnpack avg_pool2d multiplier is AvgPool2dParams::qnnpack_mult");
  if (rule == AvgPool2dRule::Nchw) {
    const float m = static_cast<float>(1.0 / static_cast<double>(divisor));
    return {m, m};
  }
  // Equal input and output scales: fl(s_in / s_out) = 1.
  const float m = 1.0f / static_cast<float>(divisor);
  return {m, 1.0f / (1.0f / m)};
}

const KernelSet& scalar_kernels() {
  static const KernelSet k = {gemm_s16_scalar,  requantize_scalar, depthwise_row_scalar, quantize_scalar,
                              dequantize_scalar, add_float_scalar, add_fixed_scalar,    relu_scalar,
                              max_pool2d_scalar, adaptive_avg_pool2d_scalar, lookup_scalar, mul_scalar,
                              avg_pool2d_scalar, batch_norm_scalar, gemm_u8s8_scalar, clamp_u8_scalar};
  return k;
}

const KernelSet& avx2_kernels() {
  static const KernelSet k = {gemm_s16_avx2,  requantize_avx2, depthwise_row_avx2, quantize_avx2,
                              dequantize_avx2, add_float_avx2, add_fixed_avx2,    relu_avx2,
                              max_pool2d_avx2, adaptive_avg_pool2d_avx2, lookup_avx2, mul_avx2,
                              avg_pool2d_avx2, batch_norm_avx2, gemm_u8s8_avx2, clamp_u8_avx2};
  return k;
}

const KernelSet& kernel_set(Isa isa) { return isa == Isa::Avx2 ? avx2_kernels() : scalar_kernels(); }

}  // namespace qnnpy
