// Twin checks of the pooling kernels: max, average and adaptive average (NHWC).
#include <string>

#include "kernel_tests/twin_check.h"

namespace qnnpy::kernel_tests {
namespace {

Pool2dShape random_shape(TwinContext& ctx, int64_t c, bool dilated) {
  Pool2dShape s{};
  s.kh = 1 + ctx.uniform(0, 2), s.kw = 1 + ctx.uniform(0, 2);
  s.sh = 1 + ctx.uniform(0, 1), s.sw = 1 + ctx.uniform(0, 1);
  s.ph = ctx.uniform(0, s.kh / 2), s.pw = ctx.uniform(0, s.kw / 2);
  s.dh = dilated ? 1 + ctx.uniform(0, 1) : 1, s.dw = dilated ? 1 + ctx.uniform(0, 1) : 1;
  // At least one dilated window fits in the input.
  s.n = 1 + ctx.uniform(0, 1), s.c = c;
  s.h = (s.kh - 1) * s.dh + 1 + ctx.uniform(0, 9), s.w = (s.kw - 1) * s.dw + 1 + ctx.uniform(0, 9);
  s.oh = (s.h + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  s.ow = (s.w + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  return s;
}

std::string shape_name(const char* kernel, const Pool2dShape& s) {
  return std::string(kernel) + " " + std::to_string(s.h) + "x" + std::to_string(s.w) + "x" + std::to_string(s.c) +
         " k=" + std::to_string(s.kh) + "x" + std::to_string(s.kw) + " s=" + std::to_string(s.sh) + "," +
         std::to_string(s.sw) + " out=" + std::to_string(s.oh) + "x" + std::to_string(s.ow);
}

void check(TwinContext& ctx, int64_t c) {
  const bool sgn = ctx.uniform(0, 1);
  const int32_t zp = static_cast<int32_t>(sgn ? ctx.uniform(-128, 127) : ctx.uniform(0, 255));
  const int32_t lo = sgn ? -128 : 0, hi = sgn ? 127 : 255;

  Pool2dShape s = random_shape(ctx, c, true);
  std::vector<uint8_t> x = ctx.bytes(s.n * s.h * s.w * c);
  std::vector<uint8_t> want(s.n * s.oh * s.ow * c), got(want.size());
  ctx.ref.max_pool2d(x.data(), s, sgn, want.data());
  ctx.simd.max_pool2d(x.data(), s, sgn, got.data());
  ctx.expect_equal(want, got, shape_name("max_pool2d", s));

  s = random_shape(ctx, c, false);
  x = ctx.bytes(s.n * s.h * s.w * c);
  const AvgPool2dParams pa{ctx.uniform(0, 1) ? AvgPool2dRule::Nhwc : AvgPool2dRule::Nchw, ctx.uniform(0, 1) != 0,
                           ctx.uniform(0, 3) == 0 ? static_cast<int32_t>(ctx.uniform(1, 11)) : 0, zp, lo, hi};
  want.assign(s.n * s.oh * s.ow * c, 0), got.assign(want.size(), 0);
  ctx.ref.avg_pool2d(x.data(), s, sgn, pa, want.data());
  ctx.simd.avg_pool2d(x.data(), s, sgn, pa, got.data());
  ctx.expect_equal(want, got, shape_name("avg_pool2d", s));

  s.oh = 1 + ctx.uniform(0, s.h - 1), s.ow = 1 + ctx.uniform(0, s.w - 1);
  const AvgPoolRule rules[] = {AvgPoolRule::FbgemmNhwc, AvgPoolRule::FbgemmNchw, AvgPoolRule::Qnnpack};
  const AdaptivePoolParams pp{rules[ctx.uniform(0, 2)], ctx.uniform_float(0.01f, 0.1f), ctx.uniform_float(0.01f, 0.1f),
                              zp, lo, hi};
  want.assign(s.n * s.oh * s.ow * c, 0), got.assign(want.size(), 0);
  ctx.ref.adaptive_avg_pool2d(x.data(), s, sgn, pp, want.data());
  ctx.simd.adaptive_avg_pool2d(x.data(), s, sgn, pp, got.data());
  ctx.expect_equal(want, got, shape_name("adaptive_avg_pool2d", s));
}

}  // namespace

void twin_pool(TwinContext& ctx) {
  for (int rep = 0; rep < 4; ++rep)
    for (int64_t c : {1, 3, 8, 16, 17, 29, 32, 40, 64, 70, 131}) check(ctx, c);
}

}  // namespace qnnpy::kernel_tests
