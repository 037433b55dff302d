// NEON GEMM, int16 x int16 (exact int32 sums). B is packed in k pairs (kernels.h): a
// 16-byte vector holds 4 columns x 2 k. Per step the pair of one A row is broadcast and
// smlal / smlal2 multiply-accumulate it with 2 columns each into int32 lanes; each column
// owns two lanes (even and odd k), added together (addp) at the end.
// Register tile: 3 rows x 16 columns (24 accumulators).
#include "kernels/neon/gemm_common.h"
#include "kernels/neon/neon_kernels.h"

namespace qnnpy {
namespace {

constexpr int kS16Rows = 3;

void tile(const int16_t* a, int64_t kp, int rows, const int16_t* bp, int32_t* c, int64_t ldc, int64_t cols) {
  const int16_t* row[kS16Rows];
  for (int r = 0; r < kS16Rows; ++r) row[r] = a + std::min(r, rows - 1) * kp;  // extra rows re-read the last one
  int32x4_t acc[kS16Rows][8];
  for (int r = 0; r < kS16Rows; ++r)
    for (int v = 0; v < 8; ++v) acc[r][v] = vdupq_n_s32(0);
  for (int64_t p = 0; p < kp; p += 2, bp += 2 * kGemmNR) {
    int16x8_t b[4];
    for (int g = 0; g < 4; ++g) b[g] = vld1q_s16(bp + 8 * g);
    for (int r = 0; r < kS16Rows; ++r) {
      int32_t pair;
      std::memcpy(&pair, row[r] + p, 4);
      const int16x8_t av = vreinterpretq_s16_s32(vdupq_n_s32(pair));
      for (int g = 0; g < 4; ++g) {
        acc[r][2 * g] = vmlal_s16(acc[r][2 * g], vget_low_s16(b[g]), vget_low_s16(av));
        acc[r][2 * g + 1] = vmlal_high_s16(acc[r][2 * g + 1], b[g], av);
      }
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int g = 0; g < 4; ++g) neon::store_group(c + r * ldc, g, vpaddq_s32(acc[r][2 * g], acc[r][2 * g + 1]), cols);
}

}  // namespace

void gemm_s16_neon(const int16_t* a, int64_t m, int64_t kp, const int16_t* b_packed, int64_t n, int32_t* c,
                   int64_t ldc) {
  neon::for_each_tile<kS16Rows>(m, kp * 2, kp * kGemmNR, n, ldc, c, [&](int64_t i, int rows, int64_t b_off, int32_t* ct, int64_t cols) {
    tile(a + i * kp, kp, rows, b_packed + b_off, ct, ldc, cols);
  });
}

}  // namespace qnnpy
