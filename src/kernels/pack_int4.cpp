// Packing of int4 weights for int4_group_sums (layout in kernels.h, pack_int4_groups).
#include "kernels/kernels.h"

namespace qnnpy {

int64_t packed_int4_size(int64_t k, int64_t n) { return (n + kInt4Block - 1) / kInt4Block * 8 * k; }

void pack_int4_groups(const int8_t* w, int64_t n, int64_t k, uint8_t* packed) {
  const int64_t blocks = (n + kInt4Block - 1) / kInt4Block;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t k0 = 0; k0 < k; k0 += 8)
      for (int64_t j = 0; j < kInt4Block; ++j)
        for (int64_t t = 0; t < 4; ++t) {
          const int64_t col = b * kInt4Block + j;
          const int low = col < n ? w[col * k + k0 + t] + 8 : 8, high = col < n ? w[col * k + k0 + 4 + t] + 8 : 8;
          packed[b * 8 * k + k0 * 8 + 4 * j + t] = static_cast<uint8_t>(low | (high << 4));
        }
}

}  // namespace qnnpy
