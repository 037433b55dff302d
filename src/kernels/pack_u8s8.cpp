// Packing of int8 weights for gemm_u8s8 (layout in kernels.h).
#include "kernels/kernels.h"

namespace qnnpy {

int64_t packed_b_u8s8_size(int64_t k, int64_t n) {
  const int64_t kq = (k + 3) / 4 * 4, np = (n + kGemmNR - 1) / kGemmNR * kGemmNR;
  return kq * np;
}

void pack_b_u8s8(const int8_t* b, int64_t k, int64_t n, int8_t* packed) {
  const int64_t quads = (k + 3) / 4, blocks = (n + kGemmNR - 1) / kGemmNR;
  for (int64_t nb = 0; nb < blocks; ++nb)
    for (int64_t q = 0; q < quads; ++q)
      for (int64_t j = 0; j < kGemmNR; ++j)
        for (int64_t h = 0; h < 4; ++h) {
          const int64_t row = 4 * q + h, col = nb * kGemmNR + j;
          packed[((nb * quads + q) * kGemmNR + j) * 4 + h] = (row < k && col < n) ? b[row * n + col] : 0;
        }
}

}  // namespace qnnpy
