// NEON GEMM, uint8 activations x int8 weights, without the dot-product extension.
// NEON has no mixed-sign byte multiply, so a is recentred to int8: a - 128 (eor 0x80),
// and c = sum (a - 128) b + 128 sum_k b (column sums, gemm_common.h). Per step, the
// quad of 4 bytes of one A row is broadcast; smull / smull2 form the 16 int16 products of
// that quad with 4 columns (exact: |(a - 128) b| <= 2^14) and sadalp adds adjacent
// product pairs into int32 lanes. Each column thus owns two int32 lanes (k pairs 0-1 and
// 2-3 of every quad), added together (addp) at the end. Exact for any uint8 input: no
// int16 sum is ever formed. Register tile: 3 rows x 16 columns (24 accumulators).
// Also the byte clamp that prepares the input of the AVX2 GEMM (runtime/u8s8_input.h).
#include "kernels/neon/gemm_common.h"
#include "kernels/neon/neon_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

constexpr int kU8S8Rows = 3;

void tile(const uint8_t* a, int64_t kq, int rows, const int8_t* bp, int32_t* c, int64_t ldc, int64_t cols) {
  const uint8_t* row[kU8S8Rows];
  for (int r = 0; r < kU8S8Rows; ++r) row[r] = a + std::min(r, rows - 1) * kq;  // extra rows re-read the last one
  const uint8x16_t bias = vdupq_n_u8(0x80);
  int32x4_t acc[kU8S8Rows][8];
  for (int r = 0; r < kU8S8Rows; ++r)
    for (int v = 0; v < 8; ++v) acc[r][v] = vdupq_n_s32(0);
  for (int64_t q = 0; q < kq; q += 4, bp += 64) {
    int8x16_t b[4];
    for (int g = 0; g < 4; ++g) b[g] = vld1q_s8(bp + 16 * g);
    for (int r = 0; r < kU8S8Rows; ++r) {
      uint32_t quad;
      std::memcpy(&quad, row[r] + q, 4);
      const int8x16_t av = vreinterpretq_s8_u8(veorq_u8(vreinterpretq_u8_u32(vdupq_n_u32(quad)), bias));
      for (int g = 0; g < 4; ++g) {
        acc[r][2 * g] = vpadalq_s16(acc[r][2 * g], vmull_s8(vget_low_s8(b[g]), vget_low_s8(av)));
        acc[r][2 * g + 1] = vpadalq_s16(acc[r][2 * g + 1], vmull_high_s8(b[g], av));
      }
    }
  }
  int32x4_t sum[4];
  neon::column_sums_u8s8(bp - 16 * kq, kq, sum);
  for (int r = 0; r < rows; ++r)
    for (int g = 0; g < 4; ++g) {
      const int32x4_t v = vaddq_s32(vpaddq_s32(acc[r][2 * g], acc[r][2 * g + 1]), vshlq_n_s32(sum[g], 7));
      neon::store_group(c + r * ldc, g, v, cols);
    }
}

}  // namespace

void gemm_u8s8_neon(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                    int64_t ldc) {
  neon::for_each_tile<kU8S8Rows>(m, kq, kq * kGemmNR, n, ldc, c, [&](int64_t i, int rows, int64_t b_off, int32_t* ct, int64_t cols) {
    tile(a + i * kq, kq, rows, b_packed + b_off, ct, ldc, cols);
  });
}

int64_t clamp_u8_neon(const uint8_t* x, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags) {
  static_assert(kClampBlock == 32, "two NEON vectors per block");
  const uint8x16_t vb = vdupq_n_u8(bound);
  int64_t flagged = 0, b = 0;
  for (; (b + 1) * kClampBlock <= n; ++b) {
    const uint8x16_t v0 = vld1q_u8(x + b * kClampBlock), v1 = vld1q_u8(x + b * kClampBlock + 16);
    vst1q_u8(out + b * kClampBlock, vminq_u8(v0, vb));
    vst1q_u8(out + b * kClampBlock + 16, vminq_u8(v1, vb));
    flags[b] = vmaxvq_u8(vmaxq_u8(v0, v1)) > bound;
    flagged += flags[b];
  }
  if (b * kClampBlock < n) {
    flagged += clamp_u8_scalar(x + b * kClampBlock, n - b * kClampBlock, bound, out + b * kClampBlock, flags + b);
  }
  return flagged;
}

}  // namespace qnnpy
