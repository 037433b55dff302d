#include "kernels/self_check.h"

#include <vector>

#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

bool gemm_u8s8_matches_scalar(void (*gemm)(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n,
                                           int32_t* c, int64_t ldc),
                              int64_t m, int64_t k, int64_t n) {
  const int64_t kq = (k + 3) / 4 * 4;
  std::vector<uint8_t> a(m * kq, 0);
  std::vector<int8_t> b(k * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) a[i * kq + j] = static_cast<uint8_t>((i * k + j) * 37 + 11);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int8_t>(static_cast<uint8_t>(i * 101 + 7));
  std::vector<int8_t> packed(static_cast<size_t>(packed_b_u8s8_size(k, n)));
  pack_b_u8s8(b.data(), k, n, packed.data());
  std::vector<int32_t> want(m * n), got(m * n);
  gemm_u8s8_scalar(a.data(), m, kq, packed.data(), n, want.data(), n);
  gemm(a.data(), m, kq, packed.data(), n, got.data(), n);
  return want == got;
}

}  // namespace qnnpy
