// Twin checks of the Winograd F(2x2, 3x3) input and output transforms.
#include <string>

#include "kernel_tests/twin_check.h"

namespace qnnpy::kernel_tests {
namespace {

void check_input(TwinContext& ctx, int64_t tiles, int64_t c, bool is_signed) {
  const int64_t row_stride = (2 * tiles + 2) * c + ctx.uniform(0, 5);
  const std::vector<uint8_t> x = ctx.bytes(4 * row_stride);
  const int32_t zx = is_signed ? static_cast<int32_t>(ctx.uniform(-128, 127)) : static_cast<int32_t>(ctx.uniform(0, 255));
  const WinogradInput s{tiles, c, row_stride, tiles * c + 3, is_signed, zx};
  std::vector<int16_t> want(16 * s.plane, 7), got(16 * s.plane, 7);
  ctx.ref.winograd_input(x.data(), s, want.data());
  ctx.simd.winograd_input(x.data(), s, got.data());
  ctx.expect_equal(want, got, "winograd_input tiles=" + std::to_string(tiles) + " c=" + std::to_string(c) +
                                  (is_signed ? " int8" : " uint8"));
}

// Any int32 M: the output transform's sums wrap, as they may before the final 4 Y fits.
void check_output(TwinContext& ctx, int64_t tiles, int64_t n) {
  const int64_t plane = tiles * n + 5, y_row = 2 * tiles * n + 2;
  std::vector<int32_t> m(16 * plane);
  for (auto& v : m) v = static_cast<int32_t>(ctx.uniform(INT32_MIN, INT32_MAX));
  std::vector<int32_t> want(2 * y_row, 7), got(2 * y_row, 7);
  const WinogradOutput s{tiles, n, plane, y_row};
  ctx.ref.winograd_output(m.data(), s, want.data());
  ctx.simd.winograd_output(m.data(), s, got.data());
  ctx.expect_equal(want, got, "winograd_output tiles=" + std::to_string(tiles) + " n=" + std::to_string(n));
}

}  // namespace

void twin_winograd(TwinContext& ctx) {
  for (int64_t tiles : {1, 2, 7, 28})
    for (int64_t c : {1, 8, 16, 17, 64, 70}) {
      check_input(ctx, tiles, c, false);
      check_input(ctx, tiles, c, true);
      check_output(ctx, tiles, c);
    }
}

}  // namespace qnnpy::kernel_tests
