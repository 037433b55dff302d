// AVX-512 VNNI depthwise conv over quads of interleaved input rows (kernels.h, DepthwiseQuads):
// vpdpbusd adds each lane's four u8 x s8 products straight into int32, exact for any byte (no
// int16 pair sums, so the input needs no clamp). 16 channels per zmm, then 8 per ymm (AVX-512 VL),
// then the scalar tail; the walk is kernels/depthwise_quads_walk.h.
#include <immintrin.h>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/depthwise_quads_walk.h"

namespace qnnpy {
namespace {

// One vector width: 16 channels (zmm) or 8 (ymm).
struct Zmm {
  using V = __m512i;
  static constexpr int64_t kLanes = 16;
  static V zero() { return _mm512_setzero_si512(); }
  static V load(const void* p) { return _mm512_loadu_si512(p); }
  static void store(int32_t* p, V v) { _mm512_storeu_si512(p, v); }
  static V dot4(V acc, V x, V w) { return _mm512_dpbusd_epi32(acc, x, w); }
};

struct Ymm {
  using V = __m256i;
  static constexpr int64_t kLanes = 8;
  static V zero() { return _mm256_setzero_si256(); }
  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(int32_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static V dot4(V acc, V x, V w) { return _mm256_dpbusd_epi32(acc, x, w); }
};

}  // namespace

void depthwise_quads_avx512vnni(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                                int32_t* const* acc) {
  depthwise_quads_walk<Zmm, Ymm>(z, s, rows, w, acc);
}

}  // namespace qnnpy
