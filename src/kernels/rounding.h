// Float-to-int rounding exactly as the x86 kernels of PyTorch's engines do it.
#pragma once

#include <cmath>
#include <cstdint>

namespace qnnpy {

// _mm256_cvtps_epi32 under the default MXCSR: round half to even; NaN and
// values outside int32 give INT32_MIN (the "integer indefinite" value).
inline int32_t cvtps_epi32(float f) {
  if (!(f >= -2147483648.0f && f < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(std::nearbyint(f));
}

inline int32_t clamp_i32(int64_t v, int32_t lo, int32_t hi) {
  return static_cast<int32_t>(v < lo ? lo : (v > hi ? hi : v));
}

// FBGEMM's QuantizeAvx2 bounds x * inv_scale by this before converting.
constexpr float kQuantizeUpperBound = 2147483520.0f;

}  // namespace qnnpy
