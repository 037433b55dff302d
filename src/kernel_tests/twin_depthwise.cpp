// Twin checks of the depthwise row kernel over windows of 1 to 49 taps, strides and dilations.
#include <string>

#include "kernel_tests/twin_check.h"

namespace qnnpy::kernel_tests {
namespace {

void check(TwinContext& ctx, int64_t c, int64_t ow, int64_t kh, int64_t kw, int64_t sw, int64_t dil, bool is_signed) {
  const int64_t row_bytes = ((ow - 1) * sw + (kw - 1) * dil + 1) * c + 3;
  const int64_t rows = (kh - 1) * dil + 1, taps = kh * kw;
  const DepthwiseRow s{c, ow, kh, kw, sw, dil, dil, row_bytes};
  const std::vector<uint8_t> x = ctx.bytes(rows * row_bytes);
  // int8 weights minus a zero point: [-255, 255].
  std::vector<int16_t> w(taps * c), pairs((taps + 1) / 2 * 2 * c);
  for (auto& v : w) v = static_cast<int16_t>(ctx.uniform(0, 4) == 0 ? (ctx.uniform(0, 1) ? -255 : 255) : ctx.uniform(-255, 255));
  pack_depthwise_pairs(w.data(), taps, c, pairs.data());
  std::vector<int32_t> want(ow * c), got(ow * c);
  ctx.ref.depthwise_row(x.data(), s, is_signed, pairs.data(), want.data());
  ctx.simd.depthwise_row(x.data(), s, is_signed, pairs.data(), got.data());
  ctx.expect_equal(want, got, "depthwise_row c=" + std::to_string(c) + " ow=" + std::to_string(ow) + " k=" +
                                  std::to_string(kh) + "x" + std::to_string(kw) + " s=" + std::to_string(sw) +
                                  " d=" + std::to_string(dil) + (is_signed ? " int8" : " uint8"));
}

}  // namespace

void twin_depthwise(TwinContext& ctx) {
  for (int64_t c : {1, 8, 13, 16, 24, 40, 67})
    for (auto k : {std::pair<int64_t, int64_t>{3, 3}, {5, 5}, {1, 3}, {7, 7}, {1, 1}, {2, 3}})
      for (int64_t sw : {1, 2})
        for (bool sgn : {false, true}) check(ctx, c, 1 + ctx.uniform(0, 9), k.first, k.second, sw, 1 + (c % 2), sgn);
}

}  // namespace qnnpy::kernel_tests
