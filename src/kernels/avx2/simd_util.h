// Small AVX2 helpers shared by the AVX2 kernels.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace qnnpy {

inline __m256i load8_q(const uint8_t* p, bool is_signed) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return is_signed ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}

// Stores 8 int32 lanes already clamped to the 8-bit range as 8 bytes.
inline void store8_q(uint8_t* p, __m256i v) {
  const __m256i bytes = _mm256_shuffle_epi8(
      v, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                          0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
  const int32_t lo = _mm256_extract_epi32(bytes, 0), hi = _mm256_extract_epi32(bytes, 4);
  std::memcpy(p, &lo, 4);
  std::memcpy(p + 4, &hi, 4);
}

inline __m256i clamp_epi32(__m256i v, __m256i lo, __m256i hi) { return _mm256_min_epi32(_mm256_max_epi32(v, lo), hi); }

}  // namespace qnnpy
