// Twin checks of the depthwise kernels: the row kernel over windows of 1 to 49 taps, strides and
// dilations; the quads of interleaved rows (interleave4 with its clamp, depthwise_quads).
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

void check_interleave4(TwinContext& ctx, int64_t n, uint8_t bound) {
  std::vector<std::vector<uint8_t>> rows;
  for (int j = 0; j < 4; ++j) rows.push_back(ctx.bytes(n, 0, ctx.uniform(0, 1) ? 255 : bound));
  const uint8_t* ptrs[4] = {rows[0].data(), rows[1].data(), rows[2].data(), rows[3].data()};
  if (ctx.uniform(0, 2) == 0) ptrs[ctx.uniform(0, 3)] = nullptr;  // a slot of zeros
  const int64_t blocks = (n + kClampBlock - 1) / kClampBlock;
  std::vector<uint8_t> want(4 * n), got(4 * n), want_flags(4 * blocks), got_flags(4 * blocks);
  const int64_t want_count = ctx.ref.interleave4(ptrs, n, bound, want.data(), want_flags.data());
  const int64_t got_count = ctx.simd.interleave4(ptrs, n, bound, got.data(), got_flags.data());
  const std::string what = "interleave4 n=" + std::to_string(n) + " bound=" + std::to_string(bound);
  ctx.expect_equal(want, got, what);
  ctx.expect_equal(want_flags, got_flags, what + " flags");
  ctx.expect_equal(std::vector<int64_t>{want_count}, std::vector<int64_t>{got_count}, what + " count");
}

// z bytes and weights within the AVX2 kernel's contract (every pair sum fits in int16): either
// any byte with weights in [-64, 63], or bytes up to 127 with any int8 weight.
void check_quads(TwinContext& ctx, int64_t c, int64_t ow, int64_t kw, int64_t sw, int64_t dw, int64_t groups,
                 int rows) {
  const bool small_weights = ctx.uniform(0, 1) == 1;
  const int64_t pixels = (ow - 1) * sw + (kw - 1) * dw + 1, group_stride = pixels * c * 4 + 4 * ctx.uniform(0, 3);
  const std::vector<uint8_t> z = ctx.bytes(groups * group_stride, 0, small_weights ? 255 : 127);
  std::vector<std::vector<int8_t>> w;
  for (int r = 0; r < rows; ++r) {
    w.emplace_back(groups * kw * c * 4);
    for (auto& v : w.back()) {
      const int64_t extreme = ctx.uniform(0, 3) == 0 ? -128 : ctx.uniform(-128, 127);
      v = static_cast<int8_t>(small_weights ? ctx.uniform(-64, 63) : extreme);
    }
  }
  std::vector<std::vector<int32_t>> want(rows, std::vector<int32_t>(ow * c)), got = want;
  const int8_t* wp[4];
  int32_t *want_p[4], *got_p[4];
  for (int r = 0; r < rows; ++r) wp[r] = w[r].data(), want_p[r] = want[r].data(), got_p[r] = got[r].data();
  const DepthwiseQuads s{c, ow, kw, sw, dw, groups, group_stride};
  ctx.ref.depthwise_quads(z.data(), s, rows, wp, want_p);
  ctx.simd.depthwise_quads(z.data(), s, rows, wp, got_p);
  for (int r = 0; r < rows; ++r)
    ctx.expect_equal(want[r], got[r], "depthwise_quads c=" + std::to_string(c) + " ow=" + std::to_string(ow) +
                                          " kw=" + std::to_string(kw) + " s=" + std::to_string(sw) + " d=" +
                                          std::to_string(dw) + " groups=" + std::to_string(groups) + " row " +
                                          std::to_string(r) + " of " + std::to_string(rows));
}

}  // namespace

void twin_depthwise(TwinContext& ctx) {
  if (ctx.simd.depthwise_quads != nullptr) {
    for (int64_t n : {1, 31, 32, 33, 96, 200, 1000})
      for (int bound : {127, 200, 255}) check_interleave4(ctx, n, static_cast<uint8_t>(bound));
    for (int64_t c : {1, 8, 13, 16, 24, 40, 67})
      for (int64_t kw : {1, 3, 5})
        for (int64_t groups : {1, 2})
          for (int rows = 1; rows <= 4; ++rows)
            check_quads(ctx, c, 1 + ctx.uniform(0, 9), kw, 1 + ctx.uniform(0, 1), 1 + (c % 2), groups, rows);
  }
  for (int64_t c : {1, 8, 13, 16, 24, 40, 67})
    for (auto k : {std::pair<int64_t, int64_t>{3, 3}, {5, 5}, {1, 3}, {7, 7}, {1, 1}, {2, 3}})
      for (int64_t sw : {1, 2})
        for (bool sgn : {false, true}) check(ctx, c, 1 + ctx.uniform(0, 9), k.first, k.second, sw, 1 + (c % 2), sgn);
}

}  // namespace qnnpy::kernel_tests
