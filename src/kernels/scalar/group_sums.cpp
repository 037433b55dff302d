// Scalar: one group's share of a grouped-int8 linear's float sums (kernels.h, GroupSumParams).
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void add_group_sums_scalar(const int32_t* acc, int64_t n, const GroupSumParams& p, float* sums) {
  const uint32_t offset = static_cast<uint32_t>(p.offset), centered = static_cast<uint32_t>(p.centered);
  for (int64_t j = 0; j < n; ++j) {
    // Wrapping int32, as the SIMD lanes compute it.
    const uint32_t s = static_cast<uint32_t>(acc[j]) - offset * static_cast<uint32_t>(p.w_sum[j]) -
                       static_cast<uint32_t>(p.w_zero_point[j]) * centered;
    sums[j] += p.scale[j] * static_cast<float>(static_cast<int32_t>(s));
  }
}

}  // namespace qnnpy
