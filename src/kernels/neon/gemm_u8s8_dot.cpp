// NEON GEMM, uint8 activations x int8 weights, on sdot (Armv8.2 dot-product extension;
// this file alone is compiled with +dotprod and runs only where the CPU reports asimddp).
// sdot multiplies signed bytes, so a is recentred as in gemm_u8s8.cpp: a - 128 (eor 0x80),
// then c = sum (a - 128) b + 128 sum_k b. One sdot by element adds, for 4 columns, the
// 4 products of a k quad of B with one broadcast quad of A into int32 lanes: exact.
// Per 16 k (4 quads), each A row is one 16-byte load whose quads are taken as lanes 0-3.
// Register tile: 4 rows x 16 columns (16 accumulators).
#include "kernels/neon/gemm_common.h"
#include "kernels/neon/neon_kernels.h"

namespace qnnpy {
namespace {

constexpr int kMR = 4;

template <int kLane>
inline void dot_step(int32x4_t acc[kMR][4], const int8x16_t av[kMR], const int8_t* bp) {
  int8x16_t b[4];
  for (int g = 0; g < 4; ++g) b[g] = vld1q_s8(bp + 16 * g);
  for (int r = 0; r < kMR; ++r)
    for (int g = 0; g < 4; ++g) acc[r][g] = vdotq_laneq_s32(acc[r][g], b[g], av[r], kLane);
}

void tile(const uint8_t* a, int64_t kq, int rows, const int8_t* bp, int32_t* c, int64_t ldc, int64_t cols) {
  const uint8_t* row[kMR];
  for (int r = 0; r < kMR; ++r) row[r] = a + std::min(r, rows - 1) * kq;  // extra rows re-read the last one
  const uint8x16_t bias = vdupq_n_u8(0x80);
  int32x4_t acc[kMR][4];
  for (int r = 0; r < kMR; ++r)
    for (int g = 0; g < 4; ++g) acc[r][g] = vdupq_n_s32(0);
  const int8_t* b = bp;
  int64_t q = 0;
  int8x16_t av[kMR];
  for (; q + 16 <= kq; q += 16, b += 256) {
    for (int r = 0; r < kMR; ++r) av[r] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(row[r] + q), bias));
    dot_step<0>(acc, av, b);
    dot_step<1>(acc, av, b + 64);
    dot_step<2>(acc, av, b + 128);
    dot_step<3>(acc, av, b + 192);
  }
  if (q < kq) {  // 1 to 3 quads left: zero-padded copies of the rows
    const int64_t left = kq - q;
    for (int r = 0; r < kMR; ++r) {
      uint8_t tail[16] = {0};
      std::memcpy(tail, row[r] + q, static_cast<size_t>(left));
      av[r] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(tail), bias));
    }
    dot_step<0>(acc, av, b);
    if (left > 4) dot_step<1>(acc, av, b + 64);
    if (left > 8) dot_step<2>(acc, av, b + 128);
  }
  int32x4_t sum[4];
  neon::column_sums_u8s8(bp, kq, sum);
  for (int r = 0; r < rows; ++r)
    for (int g = 0; g < 4; ++g) neon::store_group(c + r * ldc, g, vaddq_s32(acc[r][g], vshlq_n_s32(sum[g], 7)), cols);
}

}  // namespace

void gemm_u8s8_neon_dot(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                        int64_t ldc) {
  neon::for_each_tile<kMR>(m, kq, kq * kGemmNR, n, ldc, c, [&](int64_t i, int rows, int64_t b_off, int32_t* ct, int64_t cols) {
    tile(a + i * kq, kq, rows, b_packed + b_off, ct, ldc, cols);
  });
}

}  // namespace qnnpy
