// avxvnni depthwise conv over quads of interleaved input rows (kernels.h, DepthwiseQuads): the
// AVX2 variant's 8 channels per ymm with vpdpbusd for its vpmaddubsw + vpmaddwd, exact for any
// byte (so the input needs no clamp); the walk is kernels/depthwise_quads_walk.h.
#include <immintrin.h>

#include "kernels/avxvnni/avxvnni_kernels.h"
#include "kernels/avxvnni/dpbusd.h"
#include "kernels/depthwise_quads_walk.h"

namespace qnnpy {
namespace {

template <VnniEncoding E>
struct Ymm {
  using V = __m256i;
  static constexpr int64_t kLanes = 8;
  static V zero() { return _mm256_setzero_si256(); }
  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(int32_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static V dot4(V acc, V x, V w) { return dpbusd<E>(acc, x, w); }
};

}  // namespace

template <VnniEncoding E>
void depthwise_quads_avxvnni(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                             int32_t* const* acc) {
  depthwise_quads_walk<Ymm<E>, Ymm<E>>(z, s, rows, w, acc);
}

template void depthwise_quads_avxvnni<VnniEncoding::Vex>(const uint8_t*, const DepthwiseQuads&, int,
                                                         const int8_t* const*, int32_t* const*);
template void depthwise_quads_avxvnni<VnniEncoding::Evex>(const uint8_t*, const DepthwiseQuads&, int,
                                                          const int8_t* const*, int32_t* const*);

}  // namespace qnnpy
