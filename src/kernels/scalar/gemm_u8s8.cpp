// Scalar reference of the uint8 x int8 GEMM (exact int32 sums), of its form with A read in
// place, and of the byte clamp.
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void gemm_u8s8_scalar(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                      int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    const uint8_t* row = a + i * kq;
    for (int64_t j = 0; j < n; ++j) {
      const int8_t* col = b_packed + (j / kGemmNR) * kq * kGemmNR + 4 * (j % kGemmNR);
      int32_t acc = 0;
      for (int64_t q = 0; q < kq; q += 4)
        for (int64_t h = 0; h < 4; ++h) acc += int32_t{row[q + h]} * col[q * kGemmNR + h];
      c[i * ldc + j] = acc;
    }
  }
}

void gemm_u8s8_runs_scalar(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c,
                           int64_t ldc) {
  const int64_t kq = a.runs * a.run_len;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const int8_t* col = b_packed + (j / kGemmNR) * kq * kGemmNR + 4 * (j % kGemmNR);
      int32_t acc = 0;
      for (int64_t s = 0; s < a.runs; ++s) {
        const uint8_t* run = a.rows[i] + s * a.run_stride;
        for (int64_t q = 0; q < a.run_len; ++q) acc += int32_t{run[q]} * col[(s * a.run_len + q / 4 * 4) * kGemmNR + q % 4];
      }
      c[i * ldc + j] = acc;
    }
  }
}

int64_t clamp_u8_scalar(const uint8_t* x, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags) {
  int64_t flagged = 0;
  for (int64_t b = 0; b * kClampBlock < n; ++b) {
    uint8_t over = 0;
    for (int64_t i = b * kClampBlock; i < n && i < (b + 1) * kClampBlock; ++i) {
      over |= x[i] > bound;
      out[i] = x[i] > bound ? bound : x[i];
    }
    flags[b] = over;
    flagged += over;
  }
  return flagged;
}

}  // namespace qnnpy
