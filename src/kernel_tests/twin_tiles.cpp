// Twin checks of the amx sets' tile operations themselves: one tdpbusd, through configure, load, store
// and release, on tiles of random legal shapes (rows, k quads and columns from 1 to 16), against the
// formula of kernels/amx/tiles.h: C[m][n] += sum over k of A[m][k] * B[k / 4][4 n + k % 4], wrapping
// int32. On the instructions (the amx set, on an AMX CPU) or their software model (amx_model).
#include <string>

#include "kernel_tests/twin_check.h"
#if defined(__x86_64__) && defined(QNNPY_AVX2_KERNELS)
#include <stdexcept>

#include "kernels/amx/amx_kernels.h"
#include "kernels/amx/tile_model.h"
#endif

namespace qnnpy::kernel_tests {
#if defined(__x86_64__) && defined(QNNPY_AVX2_KERNELS)
namespace {

// The model refuses what the CPU faults on (kernels/amx/tile_model.h): each use must throw.
void check_model_faults(TwinContext& ctx) {
  using namespace amx;
  const auto faults = [](auto use) {
    try {
      use();
    } catch (const std::logic_error&) {
      model::release();
      return true;
    }
    model::release();
    return false;
  };
  uint8_t bytes[kMaxRows * kMaxRowBytes] = {};
  TileConfig c = TileConfig::uniform(16, 64);
  TileConfig short_a = c;
  short_a.colsb[1] = 60;  // A's k (60 bytes) is not 4 x B's 16 rows
  TileConfig short_c = c;
  short_c.rows[0] = 8;  // C has fewer rows than A
  TileConfig unused_b = c;
  unused_b.rows[2] = 0, unused_b.colsb[2] = 0;
  TileConfig too_wide = c;
  too_wide.colsb[3] = 68;
  const bool all = faults([&] { model::load(0, bytes, 64); }) &&  // before ldtilecfg
                   faults([&] { model::configure(short_a), model::dpbusd(0, 1, 2); }) &&
                   faults([&] { model::configure(short_c), model::dpbusd(0, 1, 2); }) &&
                   faults([&] { model::configure(unused_b), model::dpbusd(0, 1, 2); }) &&
                   faults([&] { model::configure(c), model::dpbusd(0, 1, 1); }) &&  // two operands the same tile
                   faults([&] { model::configure(too_wide); }) &&
                   !faults([&] { model::configure(c), model::dpbusd(0, 1, 2); });
  ctx.expect_equal(std::vector<int32_t>{1}, std::vector<int32_t>{all ? 1 : 0}, "the tile model's faults");
}

// The amx set's check at first use, on the model's entries: it passes them, and fails each entry made
// wrong in one output value.
void check_self_check(TwinContext& ctx) {
  KernelSet wrong_gemm = amx_model_kernels(), wrong_runs = amx_model_kernels();
  wrong_gemm.gemm_u8s8 = [](const uint8_t* a, int64_t m, int64_t kq, const int8_t* b, int64_t n, int32_t* c,
                            int64_t ldc) {
    gemm_u8s8_amx_model(a, m, kq, b, n, c, ldc);
    c[(m - 1) * ldc + n - 1] += 1;
  };
  wrong_runs.gemm_u8s8_runs_requantized = [](const U8RowRuns& a, int64_t m, const int8_t* b, int64_t n,
                                             const RequantParams& p, RequantizeKernel requantize, uint8_t* out,
                                             int64_t ld_out) {
    gemm_u8s8_runs_requantized_amx_model(a, m, b, n, p, requantize, out, ld_out);
    out[(m - 1) * ld_out + n - 1] ^= 1;
  };
  const std::vector<int32_t> verdicts{amx_gemm_matches_scalar(amx_model_kernels()),
                                      amx_gemm_matches_scalar(wrong_gemm), amx_gemm_matches_scalar(wrong_runs)};
  ctx.expect_equal(std::vector<int32_t>{1, 0, 0}, verdicts, "the amx self-check: model passes, wrong entries fail");
}

}  // namespace
#endif

void twin_tiles(TwinContext& ctx) {
#if defined(__x86_64__) && defined(QNNPY_AVX2_KERNELS)
  auto product = tile_dpbusd_amx_model;
#if defined(QNNPY_AMX_KERNELS)
  if (ctx.isa == Isa::Amx) product = tile_dpbusd_amx;
#endif
  for (int rep = 0; rep < 200; ++rep) {
    const bool whole = rep < 8;  // the driver's shape first: 16 rows, 16 quads, 16 columns
    const int rows = whole ? 16 : static_cast<int>(ctx.uniform(1, 16));
    const int quads = whole ? 16 : static_cast<int>(ctx.uniform(1, 16));
    const int cols = whole ? 16 : static_cast<int>(ctx.uniform(1, 16));
    const std::vector<uint8_t> a = ctx.bytes(rows * 4 * quads);
    std::vector<int8_t> b(quads * 4 * cols);
    for (auto& v : b) v = static_cast<int8_t>(ctx.uniform(0, 3) == 0 ? -128 : ctx.uniform(-128, 127));
    std::vector<int32_t> want(rows * cols);
    for (auto& v : want) v = static_cast<int32_t>(ctx.uniform(0, 3) == 0 ? ctx.uniform(INT32_MAX - 100000, INT32_MAX)
                                                                           : ctx.uniform(-1000000, 1000000));
    std::vector<int32_t> got = want;
    for (int m = 0; m < rows; ++m)
      for (int n = 0; n < cols; ++n) {
        uint32_t acc = static_cast<uint32_t>(want[m * cols + n]);
        for (int k = 0; k < 4 * quads; ++k) {
          acc += static_cast<uint32_t>(int32_t{a[m * 4 * quads + k]} * b[(k / 4) * 4 * cols + 4 * n + k % 4]);
        }
        want[m * cols + n] = static_cast<int32_t>(acc);
      }
    product(rows, quads, cols, a.data(), b.data(), got.data());
    ctx.expect_equal(want, got, "tdpbusd rows=" + std::to_string(rows) + " k_quads=" + std::to_string(quads) +
                                    " cols=" + std::to_string(cols));
  }
  if (ctx.isa == Isa::AmxModel) {
    check_model_faults(ctx);
    check_self_check(ctx);
  }
#else
  (void)ctx;
#endif
}

}  // namespace qnnpy::kernel_tests
