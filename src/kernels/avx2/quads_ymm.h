// The vector width of the depthwise quads walk (kernels/depthwise_quads_walk.h) on ymm, 8 channels
// per vector, shared by the AVX2, avxvnni and AVX-512 VNNI sets (each instantiates it with a Dot4 of
// its own, so each copy is compiled with its own file's flags). Dot4::apply(acc, x, w)
// adds to each 32-bit lane of acc the four products of its u8 bytes of x and s8 bytes of w.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace qnnpy {

template <class Dot4>
struct QuadsYmm {
  using V = __m256i;
  static constexpr int64_t kLanes = 8;
  static V zero() { return _mm256_setzero_si256(); }
  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(int32_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static V dot4(V acc, V x, V w) { return Dot4::apply(acc, x, w); }
};

}  // namespace qnnpy
