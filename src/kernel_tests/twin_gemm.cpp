// Twin checks of the two GEMMs (and the u8 x s8 one with its requantization fused, where a set has
// it), the byte clamp that prepares the u8 x s8 GEMM's input, the window columns that the
// implicit-GEMM conv reads in runs, and the grouped linears' float sums of GEMM results.
#include <cstring>
#include <limits>
#include <string>

#include "kernel_tests/twin_check.h"

namespace qnnpy::kernel_tests {
namespace {

std::string shape_name(const char* kernel, int64_t m, int64_t k, int64_t n) {
  return std::string(kernel) + " m=" + std::to_string(m) + " k=" + std::to_string(k) + " n=" + std::to_string(n);
}

void check_gemm_s16(TwinContext& ctx, int64_t m, int64_t k, int64_t n) {
  const int64_t kp = (k + 1) / 2 * 2;
  std::vector<int16_t> a(m * kp, 0), b(k * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) a[i * kp + j] = static_cast<int16_t>(ctx.uniform(-4096, 4096));
  // The runtime's operands are 8-bit values minus zero points; these bounds keep every
  // int32 sum exact (the scalar reference's int32 arithmetic must not overflow).
  for (auto& v : b) v = static_cast<int16_t>(ctx.uniform(0, 3) == 0 ? -256 : ctx.uniform(-256, 255));
  std::vector<int16_t> packed(packed_b_size(k, n));
  pack_b(b.data(), k, n, packed.data());
  const int64_t ldc = n + 3;
  std::vector<int32_t> want(m * ldc, 7), got(m * ldc, 7);
  ctx.ref.gemm_s16(a.data(), m, kp, packed.data(), n, want.data(), ldc);
  ctx.simd.gemm_s16(a.data(), m, kp, packed.data(), n, got.data(), ldc);
  ctx.expect_equal(want, got, shape_name("gemm_s16", m, k, n));
}

// A random k x n int8 weight matrix, a third of it -128 (the largest products), packed by pack_b_u8s8.
std::vector<int8_t> packed_u8s8_weights(TwinContext& ctx, int64_t k, int64_t n) {
  std::vector<int8_t> b(k * n);
  for (auto& v : b) v = static_cast<int8_t>(ctx.uniform(0, 3) == 0 ? -128 : ctx.uniform(-128, 127));
  std::vector<int8_t> packed(packed_b_u8s8_size(k, n));
  pack_b_u8s8(b.data(), k, n, packed.data());
  return packed;
}

void check_gemm_u8s8(TwinContext& ctx, int64_t m, int64_t k, int64_t n, int a_max) {
  const int64_t kq = (k + 3) / 4 * 4;
  std::vector<uint8_t> a(m * kq, 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) a[i * kq + j] = static_cast<uint8_t>(ctx.uniform(0, a_max));
  const std::vector<int8_t> packed = packed_u8s8_weights(ctx, k, n);
  const int64_t ldc = n + 5;
  std::vector<int32_t> want(m * ldc, 7), got(m * ldc, 7);
  ctx.ref.gemm_u8s8(a.data(), m, kq, packed.data(), n, want.data(), ldc);
  ctx.simd.gemm_u8s8(a.data(), m, kq, packed.data(), n, got.data(), ldc);
  ctx.expect_equal(want, got, shape_name("gemm_u8s8", m, k, n) + " a_max=" + std::to_string(a_max));
}

// gemm_u8s8_runs: m rows of `runs` runs of run_len bytes, run_stride apart, each row at a random
// place in one buffer (rows may overlap, as neighbouring conv windows do), bytes up to a_max.
void check_gemm_u8s8_runs(TwinContext& ctx, int64_t m, int64_t runs, int64_t run_len, int64_t n, int a_max) {
  const int64_t run_stride = run_len + ctx.uniform(0, 9), kq = runs * run_len;
  const std::vector<uint8_t> buffer = ctx.bytes((runs - 1) * run_stride + run_len + 64, 0, a_max);
  std::vector<const uint8_t*> rows(m);
  for (auto& r : rows) r = buffer.data() + ctx.uniform(0, 64);
  const std::vector<int8_t> packed = packed_u8s8_weights(ctx, kq, n);
  const int64_t ldc = n + 2;
  std::vector<int32_t> want(m * ldc, 7), got(m * ldc, 7);
  const U8RowRuns a{rows.data(), runs, run_len, run_stride};
  ctx.ref.gemm_u8s8_runs(a, m, packed.data(), n, want.data(), ldc);
  ctx.simd.gemm_u8s8_runs(a, m, packed.data(), n, got.data(), ldc);
  ctx.expect_equal(want, got, "gemm_u8s8_runs m=" + std::to_string(m) + " runs=" + std::to_string(runs) +
                                  " run_len=" + std::to_string(run_len) + " n=" + std::to_string(n));
}

// gemm_u8s8_runs (and, where the set has it, gemm_u8s8_runs_requantized against gemm_u8s8_runs and
// requantize of the scalar set) over rows `spacing` bytes apart in one buffer, as a conv's output pixels
// along an output row are, and run_len a multiple of 64: the rows an amx GEMM reads in place. With
// `break_at`, the rows from there on lie one byte further (two output rows), so a tile spans both.
// Bytes up to a_max.
void check_spaced_runs(TwinContext& ctx, int64_t m, int64_t runs, int64_t run_len, int64_t spacing, int64_t n,
                       int64_t break_at, int a_max) {
  const int64_t run_stride = run_len * 2 + ctx.uniform(0, 3), kq = runs * run_len;
  const std::vector<uint8_t> buffer = ctx.bytes((m - 1) * spacing + (runs - 1) * run_stride + run_len + 1, 0, a_max);
  std::vector<const uint8_t*> rows(m);
  for (int64_t i = 0; i < m; ++i) rows[i] = buffer.data() + i * spacing + (i >= break_at ? 1 : 0);
  const std::vector<int8_t> packed = packed_u8s8_weights(ctx, kq, n);
  const U8RowRuns a{rows.data(), runs, run_len, run_stride};
  const std::string what = "m=" + std::to_string(m) + " runs=" + std::to_string(runs) + " run_len=" +
                           std::to_string(run_len) + " spacing=" + std::to_string(spacing) + " n=" + std::to_string(n) +
                           " break_at=" + std::to_string(break_at);
  const int64_t ldc = n + 1;
  std::vector<int32_t> want(m * ldc, 7), got(m * ldc, 7);
  ctx.ref.gemm_u8s8_runs(a, m, packed.data(), n, want.data(), ldc);
  ctx.simd.gemm_u8s8_runs(a, m, packed.data(), n, got.data(), ldc);
  ctx.expect_equal(want, got, "gemm_u8s8_runs spaced " + what);
  if (ctx.simd.gemm_u8s8_runs_requantized == nullptr) return;
  for (RequantRule rule : kRequantRules) {
    const RandomRequant r(ctx, n, rule);
    const int64_t ld_out = n + 3;
    std::vector<uint8_t> want_q(m * ld_out, 0xa5), got_q(m * ld_out, 0xa5);
    ctx.ref.requantize(want.data(), m, n, ldc, r.params, want_q.data(), ld_out);
    ctx.simd.gemm_u8s8_runs_requantized(a, m, packed.data(), n, r.params, ctx.simd.requantize, got_q.data(), ld_out);
    ctx.expect_equal(want_q, got_q, std::string("gemm_u8s8_runs_requantized ") + rule_name(rule) + " " + what);
  }
}

// window_columns from kh rows of width pixels of c bytes, each its own allocation of exactly that
// size (a sanitized build reports a read past one); only the kh * c * width bytes of the contract
// are compared (the SIMD form may write past them).
void check_window_columns(TwinContext& ctx, int64_t kh, int64_t c, int64_t width) {
  std::vector<std::vector<uint8_t>> rows;
  std::vector<const uint8_t*> pointers;
  for (int64_t ky = 0; ky < kh; ++ky) rows.push_back(ctx.bytes(width * c));
  for (const auto& row : rows) pointers.push_back(row.data());
  if (kh > 1 && ctx.uniform(0, 1) == 1) pointers[ctx.uniform(1, kh - 1)] = pointers[0];  // a row read twice
  const int64_t n = kh * c * width;
  std::vector<uint8_t> want(n + kWindowColumnsSlack), got(n + kWindowColumnsSlack);
  ctx.ref.window_columns(pointers.data(), kh, c, width, want.data());
  ctx.simd.window_columns(pointers.data(), kh, c, width, got.data());
  want.resize(n);
  got.resize(n);
  ctx.expect_equal(want, got, "window_columns kh=" + std::to_string(kh) + " c=" + std::to_string(c) +
                                  " width=" + std::to_string(width));
}

void check_clamp(TwinContext& ctx, int64_t n) {
  const uint8_t bound = static_cast<uint8_t>(ctx.uniform(0, 255));
  const std::vector<uint8_t> x = ctx.bytes(n);
  const int64_t blocks = (n + kClampBlock - 1) / kClampBlock;
  std::vector<uint8_t> want(n), got(n), want_flags(blocks), got_flags(blocks);
  const int64_t want_count = ctx.ref.clamp_u8(x.data(), n, bound, want.data(), want_flags.data());
  const int64_t got_count = ctx.simd.clamp_u8(x.data(), n, bound, got.data(), got_flags.data());
  const std::string what = "clamp_u8 n=" + std::to_string(n) + " bound=" + std::to_string(bound);
  ctx.expect_equal(want, got, what);
  ctx.expect_equal(want_flags, got_flags, what + " flags");
  ctx.expect_equal(std::vector<int64_t>{want_count}, std::vector<int64_t>{got_count}, what + " count");
}

}  // namespace

// add_group_sums over any int32 accumulators, sums, offsets and zero points (the int32 terms wrap alike), with
// scales of either sign.
void check_group_sums(TwinContext& ctx, int64_t n) {
  std::vector<int32_t> acc(n), w_sum(n), w_zero_point(n);
  std::vector<float> scale(n), want(n), got(n);
  for (int64_t j = 0; j < n; ++j) {
    acc[j] = static_cast<int32_t>(ctx.uniform(INT32_MIN, INT32_MAX));
    w_sum[j] = static_cast<int32_t>(ctx.uniform(-4096, 4096));
    w_zero_point[j] = static_cast<int32_t>(ctx.uniform(-8, 7));
    scale[j] = ctx.uniform_float(-0.05f, 0.05f);
    want[j] = got[j] = ctx.uniform_float(-1.0e4f, 1.0e4f);
  }
  const GroupSumParams p{w_sum.data(), w_zero_point.data(), scale.data(), static_cast<int32_t>(ctx.uniform(0, 255)),
                         static_cast<int32_t>(ctx.uniform(-8192, 8192))};
  ctx.ref.add_group_sums(acc.data(), n, p, want.data());
  ctx.simd.add_group_sums(acc.data(), n, p, got.data());
  std::vector<int32_t> want_bits(n), got_bits(n);
  std::memcpy(want_bits.data(), want.data(), n * sizeof(float));
  std::memcpy(got_bits.data(), got.data(), n * sizeof(float));
  ctx.expect_equal(want_bits, got_bits, "add_group_sums n=" + std::to_string(n));
}

// int4_group_sums on random int4 weights, any int8 input and zero point, with and without weight zero points;
// the sums' rows ld_sums = n + 3 apart (what lies between is left alone).
void check_int4_groups(TwinContext& ctx, int64_t m, int64_t k, int64_t group, int64_t n, bool zero_points) {
  const int64_t groups = k / group, blocks = (n + kInt4Block - 1) / kInt4Block, ld = n + 3;
  std::vector<int8_t> q(m * k), w(n * k);
  std::vector<int32_t> zx(m), centered(m * groups), zw(blocks * groups * kInt4Block, 0);
  std::vector<float> scale(blocks * groups * kInt4Block, 0.0f);
  for (auto& v : q) v = static_cast<int8_t>(ctx.uniform(-128, 127));
  for (auto& v : w) v = static_cast<int8_t>(ctx.uniform(-8, 7));
  for (int64_t r = 0; r < m; ++r) {
    zx[r] = static_cast<int32_t>(ctx.uniform(-128, 127));
    for (int64_t g = 0; g < groups; ++g) {
      int32_t sum = 0;
      for (int64_t i = g * group; i < (g + 1) * group; ++i) sum += q[r * k + i];
      centered[r * groups + g] = sum - static_cast<int32_t>(group) * zx[r];
    }
  }
  for (int64_t col = 0; col < n; ++col)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t at = (col / kInt4Block * groups + g) * kInt4Block + col % kInt4Block;
      scale[at] = ctx.uniform_float(-0.05f, 0.05f);
      if (zero_points) zw[at] = static_cast<int32_t>(ctx.uniform(-8, 7));
    }
  std::vector<uint8_t> packed(packed_int4_size(k, n));
  pack_int4_groups(w.data(), n, k, packed.data());
  std::vector<float> want(m * ld, 7.0f), got(m * ld, 7.0f);
  Int4Groups a{q.data(), centered.data(), zx.data(), m, k, group, packed.data(), scale.data(),
               zero_points ? zw.data() : nullptr, n, want.data(), ld};
  ctx.ref.int4_group_sums(a);
  a.sums = got.data();
  ctx.simd.int4_group_sums(a);
  std::vector<int32_t> want_bits(m * ld), got_bits(m * ld);
  std::memcpy(want_bits.data(), want.data(), want.size() * sizeof(float));
  std::memcpy(got_bits.data(), got.data(), got.size() * sizeof(float));
  ctx.expect_equal(want_bits, got_bits, "int4_group_sums m=" + std::to_string(m) + " k=" + std::to_string(k) +
                                            " group=" + std::to_string(group) + " n=" + std::to_string(n) +
                                            (zero_points ? " with zero points" : ""));
}

// float_dots and weighted_rows (attention's loops) on random floats, rows ld = n + 3 apart, some weights 0 over rows
// holding infinities (skipped, so the sums stay finite), compared bit for bit.
void check_float_rows(TwinContext& ctx, int64_t count, int64_t n) {
  const int64_t ld = n + 3;
  std::vector<float> x(n), rows(count * ld), w(count);
  for (float& v : x) v = ctx.uniform_float(-2.0f, 2.0f);
  for (float& v : rows) v = ctx.uniform_float(-3.0f, 3.0f);
  for (int64_t j = 0; j < count; ++j) {
    w[j] = ctx.uniform(0, 3) == 0 ? 0.0f : ctx.uniform_float(0.0f, 1.0f);
    if (w[j] == 0.0f) rows[j * ld] = std::numeric_limits<float>::infinity();
  }
  std::vector<float> want(count), got(count);
  ctx.ref.float_dots(x.data(), rows.data(), ld, count, n, want.data());
  ctx.simd.float_dots(x.data(), rows.data(), ld, count, n, got.data());
  const std::string what = " count=" + std::to_string(count) + " n=" + std::to_string(n);
  auto bits = [](const std::vector<float>& v) {
    std::vector<int32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  };
  ctx.expect_equal(bits(want), bits(got), "float_dots" + what);
  std::vector<float> want_sum(n, 7.0f), got_sum(n, 7.0f);
  ctx.ref.weighted_rows(w.data(), rows.data(), ld, count, n, want_sum.data());
  ctx.simd.weighted_rows(w.data(), rows.data(), ld, count, n, got_sum.data());
  ctx.expect_equal(bits(want_sum), bits(got_sum), "weighted_rows" + what);
}

void twin_gemm(TwinContext& ctx) {
  for (int64_t count : {1, 3, 4, 5, 9, 37})
    for (int64_t n : {1, 7, 8, 9, 24, 31, 32, 33, 64, 100}) check_float_rows(ctx, count, n);
  for (int64_t n : {1, 7, 8, 9, 31, 64, 100}) check_group_sums(ctx, n);
  for (int64_t m : {1, 2, 3, 4, 5, 9})
    for (int64_t n : {1, 8, 15, 16, 17, 40}) check_int4_groups(ctx, m, 64, 32, n, m % 2 == 0);
  check_int4_groups(ctx, 3, 256, 8, 33, true);
  for (int64_t m : {1, 2, 3}) check_int4_groups(ctx, m, 128, 32, 100, m != 2);  // blocks four at a time, then one
  check_int4_groups(ctx, 1, 64, 64, 64, false);
  check_int4_groups(ctx, 2, 512, 256, 48, false);
  const int64_t ms[] = {1, 2, 3, 5, 6, 7, 8, 13, 64};
  const int64_t ks[] = {1, 3, 4, 9, 16, 21, 27, 64, 75};  // k quads left over a 16-byte step: 0 to 3
  const int64_t ns[] = {1, 5, 16, 17, 33, 64};
  // The AVX2 u8 x s8 GEMM saturates pair sums past int16 (its caller bounds a, runtime/u8s8_input.h);
  // 127 keeps every pair in range. The NEON GEMMs are exact for any uint8.
  const int a_max = ctx.isa == Isa::Avx2 ? 127 : 255;
  for (int64_t m : ms)
    for (int64_t k : ks)
      for (int64_t n : ns) {
        check_gemm_s16(ctx, m, k, n);
        check_gemm_u8s8(ctx, m, k, n, a_max);
      }
  check_gemm_u8s8(ctx, 37, 1200, 40, a_max);  // long k: int32 sums past int16 range
  check_gemm_s16(ctx, 19, 600, 24);
  // Several row panels (about 64 KiB of A each), the last ones partial.
  check_gemm_u8s8(ctx, 130, 1200, 17, a_max);
  check_gemm_s16(ctx, 70, 1100, 17);
  // Column blocks in several groups of several blocks (the SIMD GEMMs group blocks by the size of
  // their packed B, and run each row tile over a group's blocks).
  check_gemm_u8s8(ctx, 20, 256, 100, a_max);
  check_gemm_u8s8(ctx, 20, 128, 200, a_max);
  // Blocks of 32 rows and 32 columns over k tiles of 64 bytes (the amx GEMM's), with every edge: a
  // tail of rows in the first or second tile, an odd block of columns, a k tail of 4 to 60 bytes.
  for (int64_t m : {16, 33, 64, 65})
    for (int64_t k : {60, 64, 68, 128, 200})
      for (int64_t n : {16, 17, 33, 64}) check_gemm_u8s8(ctx, m, k, n, a_max);
  for (int64_t n : {1, 31, 32, 33, 100, 1000}) check_clamp(ctx, n);
  if (ctx.simd.gemm_u8s8_runs != nullptr) {
    for (int64_t m : {1, 5, 6, 7, 13, 100})
      for (int64_t runs : {1, 3, 7})
        for (int64_t run_len : {4, 24, 196})
          for (int64_t n : {1, 17, 64, 65}) check_gemm_u8s8_runs(ctx, m, runs, run_len, n, a_max);
    check_gemm_u8s8_runs(ctx, 13, 2, 128, 200, a_max);
    for (int64_t m : {16, 40, 70})
      for (int64_t runs : {1, 3})
        for (int64_t run_len : {64, 128, 196})
          for (int64_t n : {17, 64}) {
            check_spaced_runs(ctx, m, runs, run_len, 64, n, m, a_max);
            // A break within a tile of 16 rows, and at its last row.
            check_spaced_runs(ctx, m, runs, run_len, 3 * run_len, n, m / 2 + 1, a_max);
            check_spaced_runs(ctx, m, runs, run_len, 3 * run_len, n, 15, a_max);
          }
    for (int64_t kh = 1; kh <= 9; ++kh)
      for (int64_t c : {1, 3, 4})
        for (int64_t width : {1, 7, 9, 10, 11, 17, 18, 23, 224, 229}) check_window_columns(ctx, kh, c, width);
  }
}

}  // namespace qnnpy::kernel_tests
