// Scalar reference GEMM (exact int16 x int16 -> int32).
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void gemm_s16_scalar(const int16_t* a, int64_t m, int64_t kp, const int16_t* b_packed, int64_t n, int32_t* c,
                     int64_t ldc) {
  const int64_t pairs = kp / 2;
  for (int64_t i = 0; i < m; ++i) {
    const int16_t* row = a + i * kp;
    for (int64_t j = 0; j < n; ++j) {
      const int16_t* col = b_packed + (j / kGemmNR) * pairs * 2 * kGemmNR + 2 * (j % kGemmNR);
      int32_t acc = 0;
      for (int64_t p = 0; p < pairs; ++p) {
        acc += int32_t{row[2 * p]} * col[p * 2 * kGemmNR] + int32_t{row[2 * p + 1]} * col[p * 2 * kGemmNR + 1];
      }
      c[i * ldc + j] = acc;
    }
  }
}

}  // namespace qnnpy
