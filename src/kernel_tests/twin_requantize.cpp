// Twin checks of the requantization of int32 accumulators: the float rule (int32_bias,
// qnnpack and fbgemm profiles), the fixed-point rule (fixed_point profile) and oneDNN's order
// (onednn and x86 profiles).
#include <cmath>
#include <string>

#include "kernel_tests/twin_check.h"

namespace qnnpy::kernel_tests {
namespace {

int32_t random_acc(TwinContext& ctx) {
  switch (ctx.uniform(0, 5)) {
    case 0: return static_cast<int32_t>(ctx.uniform(INT32_MIN, INT32_MAX));
    case 1: return ctx.uniform(0, 1) ? INT32_MIN : INT32_MAX;
    default: return static_cast<int32_t>(ctx.uniform(-200000, 200000));
  }
}

float random_mult(TwinContext& ctx) {
  switch (ctx.uniform(0, 7)) {
    case 0: return 0.5f;       // acc * 0.5 ties: round half to even
    case 1: return 3.0e5f;     // past int16 and int32: saturation and the out-of-range value
    case 2: return 0.0f;
    default: return std::exp2(ctx.uniform_float(-20.0f, 2.0f));
  }
}

// Output range and zero point of uint8, int8, fused-ReLU and clamped (ReLU6-like) outputs: the
// SIMD kernels leave out the clamp where [lo, hi] is the whole output type.
void random_range(TwinContext& ctx, RequantParams& p) {
  switch (ctx.uniform(0, 4)) {
    case 0: p.zp = static_cast<int32_t>(ctx.uniform(0, 255)), p.lo = 0, p.hi = 255; break;
    case 1: p.zp = static_cast<int32_t>(ctx.uniform(-128, 127)), p.lo = -128, p.hi = 127; break;
    case 2: p.zp = static_cast<int32_t>(ctx.uniform(0, 255)), p.lo = p.zp, p.hi = 255; break;
    case 3: p.zp = static_cast<int32_t>(ctx.uniform(-128, 127)), p.lo = p.zp, p.hi = 127; break;
    default:
      p.zp = static_cast<int32_t>(ctx.uniform(0, 200)), p.lo = p.zp;
      p.hi = static_cast<int32_t>(ctx.uniform(p.zp, 254));
      break;
  }
}

void check(TwinContext& ctx, int64_t m, int64_t n, RequantRule rule) {
  const int64_t ld_acc = n + 2, ld_out = n + 1;
  std::vector<int32_t> acc(m * ld_acc);
  for (auto& v : acc) v = random_acc(ctx);
  const RandomRequant r(ctx, n, rule);
  std::vector<uint8_t> want(m * ld_out, 0xa5), got(m * ld_out, 0xa5);
  ctx.ref.requantize(acc.data(), m, n, ld_acc, r.params, want.data(), ld_out);
  ctx.simd.requantize(acc.data(), m, n, ld_acc, r.params, got.data(), ld_out);
  ctx.expect_equal(want, got, std::string("requantize ") + rule_name(rule) + " m=" + std::to_string(m) +
                                  " n=" + std::to_string(n));
}

}  // namespace

const char* rule_name(RequantRule rule) {
  switch (rule) {
    case RequantRule::Float: return "float";
    case RequantRule::Fixed: return "fixed";
    case RequantRule::Onednn: return "onednn";
  }
  return "?";
}

RandomRequant::RandomRequant(TwinContext& ctx, int64_t n, RequantRule rule)
    : ibias(n), fixed_multiplier(n), fixed_shift(n), fbias(n), mult(n), w_scale(n) {
  // oneDNN's order: the input scale, and per column the weight scale (or their product, src_scale 1).
  const float src_scale = ctx.uniform(0, 3) == 0 ? 1.0f : std::exp2(ctx.uniform_float(-10.0f, 0.0f));
  for (int64_t j = 0; j < n; ++j) {
    w_scale[j] = std::exp2(ctx.uniform_float(-12.0f, -2.0f));
    ibias[j] = ctx.uniform(0, 4) == 0 ? random_acc(ctx) : static_cast<int32_t>(ctx.uniform(-5000, 5000));
    fbias[j] = ctx.uniform(0, 1) ? 0.0f : ctx.uniform_float(-3000.0f, 3000.0f);
    mult[j] = random_mult(ctx);
    // TFLite's QuantizeMultiplier gives M0 in [2^30, 2^31) or 0, shift in [-31, 30].
    fixed_multiplier[j] = ctx.uniform(0, 9) == 0 ? 0 : static_cast<int32_t>(ctx.uniform(1LL << 30, INT32_MAX));
    fixed_shift[j] = static_cast<int32_t>(ctx.uniform(0, 3) == 0 ? ctx.uniform(-31, 30) : ctx.uniform(-12, 2));
  }
  params = {ibias.data(), fbias.data(), mult.data(), 0, 0, 0};
  random_range(ctx, params);
  if (rule == RequantRule::Fixed) {
    params = {ibias.data(), nullptr, nullptr, params.zp, params.lo, params.hi, fixed_multiplier.data(),
              fixed_shift.data()};
  } else if (rule == RequantRule::Onednn) {
    // mult: the reciprocal of an output scale, so that t * mult lands near the output range (ties included,
    // from mult 0.5 and integer t) and past it (3e5).
    for (int64_t j = 0; j < n; ++j)
      if (mult[j] != 0.5f && mult[j] != 3.0e5f) mult[j] = std::exp2(ctx.uniform_float(-4.0f, 8.0f));
    params = {ibias.data(), fbias.data(), mult.data(), params.zp, params.lo, params.hi, nullptr, nullptr,
              w_scale.data(), src_scale};
  }
}

void twin_requantize(TwinContext& ctx) {
  for (int rep = 0; rep < 4; ++rep)
    for (int64_t m : {1, 3, 7})
      for (int64_t n : {1, 3, 4, 8, 15, 16, 17, 24, 33, 48, 56, 64, 150})
        for (RequantRule rule : kRequantRules) check(ctx, m, n, rule);
}

}  // namespace qnnpy::kernel_tests
