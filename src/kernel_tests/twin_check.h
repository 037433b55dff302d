// The kernel twin checks of qnnpy_kernel_tests: every kernel of a SIMD kernel set
// against the scalar reference on random inputs and edge values, bit for bit.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace qnnpy::kernel_tests {

struct TwinContext {
  const KernelSet& ref;   // the scalar kernels
  const KernelSet& simd;  // the kernels under test
  Isa isa;
  std::mt19937_64 rng;
  int checks = 0;
  int failures = 0;

  // Uniform integer in [lo, hi].
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  float uniform_float(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }
  std::vector<uint8_t> bytes(int64_t n, int lo = 0, int hi = 255);

  // Counts a check; prints the first differing element on a mismatch.
  template <class T>
  void expect_equal(const std::vector<T>& want, const std::vector<T>& got, const std::string& what);
};

// The requantization rules of kernels.h: float (int32_bias, qnnpack, fbgemm profiles), fixed point
// (fixed_point), oneDNN's order (the onednn and x86 profiles).
enum class RequantRule { Float, Fixed, Onednn };
constexpr RequantRule kRequantRules[] = {RequantRule::Float, RequantRule::Fixed, RequantRule::Onednn};
const char* rule_name(RequantRule rule);

// Random requantization parameters of n columns under `rule`, with the output ranges of uint8, int8,
// fused ReLU and clamps (twin_requantize.cpp); params points into the vectors.
struct RandomRequant {
  RandomRequant(TwinContext& ctx, int64_t n, RequantRule rule);
  RandomRequant(const RandomRequant&) = delete;
  RandomRequant& operator=(const RandomRequant&) = delete;
  std::vector<int32_t> ibias, fixed_multiplier, fixed_shift;
  std::vector<float> fbias, mult, w_scale;
  RequantParams params{};
};

// Each adds its checks to ctx (one file per kernel family).
void twin_gemm(TwinContext& ctx);
void twin_requantize(TwinContext& ctx);
void twin_depthwise(TwinContext& ctx);
void twin_elementwise(TwinContext& ctx);
void twin_pool(TwinContext& ctx);
void twin_winograd(TwinContext& ctx);
// The tile operations of the amx sets (the instructions, or their model) against the formula of
// kernels/amx/tiles.h on tiles of every shape; x86-64 builds only.
void twin_tiles(TwinContext& ctx);

// Runs all twin checks of `isa` against the scalar kernels; returns the number of failures.
int run_twin_checks(Isa isa, uint64_t seed);

}  // namespace qnnpy::kernel_tests
