// AVX-512 VNNI depthwise conv over quads of interleaved input rows (kernels.h, DepthwiseQuads):
// vpdpbusd adds each lane's four u8 x s8 products straight into int32, exact for any byte (no
// int16 pair sums, so the input needs no clamp). 16 channels per zmm, then 8 per ymm (AVX-512 VL),
// then the scalar tail; the walk is kernels/depthwise_quads_walk.h.
#include <immintrin.h>

#include "kernels/avx2/quads_ymm.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/depthwise_quads_walk.h"

namespace qnnpy {
namespace {

// One vector width: 16 channels (zmm); 8 (ymm) below.
struct Zmm {
  using V = __m512i;
  static constexpr int64_t kLanes = 16;
  static V zero() { return _mm512_setzero_si512(); }
  static V load(const void* p) { return _mm512_loadu_si512(p); }
  static void store(int32_t* p, V v) { _mm512_storeu_si512(p, v); }
  static V dot4(V acc, V x, V w) { return _mm512_dpbusd_epi32(acc, x, w); }
};

// The ymm width of kernels/avx2/quads_ymm.h with vpdpbusd (EVEX, AVX-512 VL): QuadsYmm of a type
// local to this translation unit, so its instantiation is compiled with this file's flags only.
struct DpbusdYmm {
  static __m256i apply(__m256i acc, __m256i x, __m256i w) { return _mm256_dpbusd_epi32(acc, x, w); }
};
using Ymm = QuadsYmm<DpbusdYmm>;

}  // namespace

void depthwise_quads_avx512vnni(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                                int32_t* const* acc) {
  depthwise_quads_walk<Zmm, Ymm>(z, s, rows, w, acc);
}

}  // namespace qnnpy
