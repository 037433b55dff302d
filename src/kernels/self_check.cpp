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

bool gemm_u8s8_runs_requantized_matches_scalar(decltype(KernelSet::gemm_u8s8_runs_requantized) gemm,
                                               RequantizeKernel requantize, int64_t m, int64_t runs, int64_t run_len,
                                               int64_t spacing, int64_t n) {
  const int64_t run_stride = 2 * run_len + 1, k = runs * run_len;
  std::vector<uint8_t> buffer((m - 1) * spacing + (runs - 1) * run_stride + run_len);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(i * 37 + 11);
  std::vector<const uint8_t*> rows(m);
  for (int64_t i = 0; i < m; ++i) rows[i] = buffer.data() + i * spacing;
  const U8RowRuns a{rows.data(), runs, run_len, run_stride};
  std::vector<int8_t> b(k * n);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int8_t>(static_cast<uint8_t>(i * 101 + 7));
  std::vector<int8_t> packed(static_cast<size_t>(packed_b_u8s8_size(k, n)));
  pack_b_u8s8(b.data(), k, n, packed.data());
  std::vector<int32_t> ibias(n), acc(m * n);
  std::vector<float> fbias(n), mult(n);
  for (int64_t j = 0; j < n; ++j) {
    ibias[j] = static_cast<int32_t>(j * 977) - 20000;
    fbias[j] = static_cast<float>(ibias[j]);
    mult[j] = 1.0f / static_cast<float>(3000 + 61 * j);  // outputs from about 70 to 160: none clamped
  }
  const RequantParams p{ibias.data(), fbias.data(), mult.data(), 128, 0, 255};
  std::vector<uint8_t> want(m * n), got(m * n);
  gemm_u8s8_runs_scalar(a, m, packed.data(), n, acc.data(), n);
  requantize_scalar(acc.data(), m, n, n, p, want.data(), n);
  gemm(a, m, packed.data(), n, p, requantize, got.data(), n);
  return want == got;
}

}  // namespace qnnpy
