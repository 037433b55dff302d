// AVX2: one group's share of a grouped-int8 linear's float sums (kernels.h, GroupSumParams), 8 columns a
// step (vpmulld wraps as the scalar twin's uint32 arithmetic; the multiply and the add stay two roundings).
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

#include <immintrin.h>

namespace qnnpy {

void add_group_sums_avx2(const int32_t* acc, int64_t n, const GroupSumParams& p, float* sums) {
  const __m256i offset = _mm256_set1_epi32(p.offset), centered = _mm256_set1_epi32(p.centered);
  const int64_t n8 = n / 8 * 8;
  for (int64_t j = 0; j < n8; j += 8) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j));
    const __m256i w_sum = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.w_sum + j));
    const __m256i w_zero_point = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.w_zero_point + j));
    const __m256i s = _mm256_sub_epi32(_mm256_sub_epi32(a, _mm256_mullo_epi32(offset, w_sum)),
                                       _mm256_mullo_epi32(w_zero_point, centered));
    const __m256 term = _mm256_mul_ps(_mm256_loadu_ps(p.scale + j), _mm256_cvtepi32_ps(s));
    _mm256_storeu_ps(sums + j, _mm256_add_ps(_mm256_loadu_ps(sums + j), term));
  }
  if (n8 < n) {
    const GroupSumParams tail{p.w_sum + n8, p.w_zero_point + n8, p.scale + n8, p.offset, p.centered};
    add_group_sums_scalar(acc + n8, n - n8, tail, sums + n8);
  }
}

}  // namespace qnnpy
