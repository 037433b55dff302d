// Twin checks of the element-wise kernels: quantize, dequantize, add (float and fixed
// point), relu, lookup, multiply, batch norm, planes to pixels.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernel_tests/twin_check.h"

namespace qnnpy::kernel_tests {
namespace {

// Lengths around PyTorch's 64-byte vector blocks and the SIMD widths.
constexpr int64_t kLengths[] = {1, 7, 16, 31, 63, 64, 65, 130, 333};

std::vector<int32_t> float_bits(const std::vector<float>& v) {
  std::vector<int32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
  return bits;
}

struct Range {
  bool is_signed;
  int32_t zp, lo, hi;
};
Range random_range(TwinContext& ctx, bool relu = false) {
  const bool sgn = ctx.uniform(0, 1);
  const int32_t zp = static_cast<int32_t>(sgn ? ctx.uniform(-128, 127) : ctx.uniform(0, 255));
  return {sgn, zp, relu ? zp : (sgn ? -128 : 0), sgn ? 127 : 255};
}

std::string len(const char* kernel, int64_t n) { return std::string(kernel) + " n=" + std::to_string(n); }

void check_quantize(TwinContext& ctx, int64_t n) {
  std::vector<float> x(n);
  for (auto& v : x) {
    switch (ctx.uniform(0, 9)) {
      case 0: v = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: v = ctx.uniform(0, 1) ? 3.0e38f : -3.0e38f; break;
      case 2: v = static_cast<float>(ctx.uniform(-300, 300)) + 0.5f; break;  // ties at inv_scale 1
      default: v = ctx.uniform_float(-50.0f, 50.0f);
    }
  }
  const Range r = random_range(ctx);
  const float inv_scale = ctx.uniform(0, 2) == 0 ? 1.0f : std::exp2(ctx.uniform_float(-4.0f, 6.0f));
  std::vector<uint8_t> want(n), got(n);
  ctx.ref.quantize(x.data(), n, inv_scale, r.zp, r.lo, r.hi, want.data());
  ctx.simd.quantize(x.data(), n, inv_scale, r.zp, r.lo, r.hi, got.data());
  ctx.expect_equal(want, got, len("quantize", n));
}

void check_dequantize(TwinContext& ctx, int64_t n) {
  const Range r = random_range(ctx);
  const std::vector<uint8_t> q = ctx.bytes(n);
  const float scale = std::exp2(ctx.uniform_float(-12.0f, 2.0f));
  std::vector<float> want(n), got(n);
  ctx.ref.dequantize(q.data(), n, r.is_signed, scale, r.zp, want.data());
  ctx.simd.dequantize(q.data(), n, r.is_signed, scale, r.zp, got.data());
  ctx.expect_equal(float_bits(want), float_bits(got), len("dequantize", n));
}

void check_add(TwinContext& ctx, int64_t n) {
  const bool relu = ctx.uniform(0, 1);
  const Range r = random_range(ctx, relu);
  const std::vector<uint8_t> a = ctx.bytes(n), b = ctx.bytes(n);
  const int32_t a_zp = static_cast<int32_t>(r.is_signed ? ctx.uniform(-128, 127) : ctx.uniform(0, 255));
  const int32_t b_zp = static_cast<int32_t>(r.is_signed ? ctx.uniform(-128, 127) : ctx.uniform(0, 255));
  const float a_scale = std::exp2(ctx.uniform_float(-8.0f, 0.0f)), b_scale = std::exp2(ctx.uniform_float(-8.0f, 0.0f));
  const float out_scale = std::exp2(ctx.uniform_float(-8.0f, 0.0f));
  const AddFloatParams pf{a_scale, b_scale, 1.0f / out_scale, a_zp, b_zp, r.zp, r.lo, r.hi, relu};
  std::vector<uint8_t> want(n), got(n);
  ctx.ref.add_float(a.data(), b.data(), n, r.is_signed, pf, want.data());
  ctx.simd.add_float(a.data(), b.data(), n, r.is_signed, pf, got.data());
  ctx.expect_equal(want, got, len("add_float", n));

  // QNNPACK's parameters (runtime/ops/elementwise_ops.cpp): multipliers below 2^22, shift in [13, 31].
  AddFixedParams px;
  px.shift = static_cast<int32_t>(ctx.uniform(13, 31));
  px.a_mult = static_cast<int32_t>(ctx.uniform(0, (1 << 22) - 1));
  px.b_mult = static_cast<int32_t>(ctx.uniform(0, (1 << 22) - 1));
  px.zp_term = static_cast<int32_t>(-(static_cast<uint32_t>(px.a_mult) * static_cast<uint32_t>(a_zp) +
                                      static_cast<uint32_t>(px.b_mult) * static_cast<uint32_t>(b_zp)));
  px.out_zp = r.zp, px.lo = r.lo, px.hi = r.hi;
  ctx.ref.add_fixed(a.data(), b.data(), n, r.is_signed, px, want.data());
  ctx.simd.add_fixed(a.data(), b.data(), n, r.is_signed, px, got.data());
  ctx.expect_equal(want, got, len("add_fixed", n) + " shift=" + std::to_string(px.shift));
}

void check_relu_lookup_mul(TwinContext& ctx, int64_t n) {
  const Range r = random_range(ctx);
  const std::vector<uint8_t> a = ctx.bytes(n), b = ctx.bytes(n), table = ctx.bytes(256);
  std::vector<uint8_t> want(n), got(n);
  ctx.ref.relu(a.data(), n, r.is_signed, r.zp, want.data());
  ctx.simd.relu(a.data(), n, r.is_signed, r.zp, got.data());
  ctx.expect_equal(want, got, len("relu", n));
  ctx.ref.lookup(a.data(), n, table.data(), want.data());
  ctx.simd.lookup(a.data(), n, table.data(), got.data());
  ctx.expect_equal(want, got, len("lookup", n));
  const MulParams pm{std::exp2(ctx.uniform_float(-14.0f, -4.0f)),
                     static_cast<int32_t>(r.is_signed ? ctx.uniform(-128, 127) : ctx.uniform(0, 255)),
                     static_cast<int32_t>(r.is_signed ? ctx.uniform(-128, 127) : ctx.uniform(0, 255)), r.zp, r.lo, r.hi};
  ctx.ref.mul(a.data(), b.data(), n, r.is_signed, pm, want.data());
  ctx.simd.mul(a.data(), b.data(), n, r.is_signed, pm, got.data());
  ctx.expect_equal(want, got, len("mul", n));
}

void check_batch_norm(TwinContext& ctx, int64_t pixels, int64_t c) {
  const Range r = random_range(ctx);
  const std::vector<uint8_t> x = ctx.bytes(pixels * c);
  std::vector<float> alpha(c), beta(c);
  for (int64_t ch = 0; ch < c; ++ch) alpha[ch] = ctx.uniform_float(-2.0f, 2.0f), beta[ch] = ctx.uniform_float(-50.0f, 50.0f);
  const BatchNormParams p{alpha.data(), beta.data(),
                          static_cast<int32_t>(r.is_signed ? ctx.uniform(-128, 127) : ctx.uniform(0, 255)), r.zp, r.lo,
                          r.hi};
  std::vector<uint8_t> want(pixels * c), got(pixels * c);
  ctx.ref.batch_norm(x.data(), pixels, c, r.is_signed, p, want.data());
  ctx.simd.batch_norm(x.data(), pixels, c, r.is_signed, p, got.data());
  ctx.expect_equal(want, got, "batch_norm pixels=" + std::to_string(pixels) + " c=" + std::to_string(c));
}

void check_interleave_planes(TwinContext& ctx, int64_t pixels, int64_t c) {
  const int64_t stride = pixels + ctx.uniform(0, 5);
  const std::vector<uint8_t> planes = ctx.bytes(c * stride);
  std::vector<uint8_t> want(pixels * c), got(pixels * c);
  ctx.ref.interleave_planes(planes.data(), stride, pixels, c, want.data());
  ctx.simd.interleave_planes(planes.data(), stride, pixels, c, got.data());
  ctx.expect_equal(want, got, "interleave_planes pixels=" + std::to_string(pixels) + " c=" + std::to_string(c));
}

}  // namespace

void twin_elementwise(TwinContext& ctx) {
  for (int rep = 0; rep < 3; ++rep)
    for (int64_t n : kLengths) {
      check_quantize(ctx, n);
      check_dequantize(ctx, n);
      check_add(ctx, n);
      check_relu_lookup_mul(ctx, n);
    }
  for (int64_t c : {1, 5, 8, 13, 16, 35}) check_batch_norm(ctx, 1 + ctx.uniform(0, 6), c);
  for (int64_t c : {1, 2, 3, 4, 7})
    for (int64_t pixels : kLengths) check_interleave_planes(ctx, pixels, c);
}

}  // namespace qnnpy::kernel_tests
