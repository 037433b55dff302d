// avxvnni depthwise conv over quads of interleaved input rows (kernels.h, DepthwiseQuads): the
// AVX2 variant's 8 channels per ymm with vpdpbusd for its vpmaddubsw + vpmaddwd, exact for any
// byte (so the input needs no clamp); the walk is kernels/depthwise_quads_walk.h.
#include <immintrin.h>

#include "kernels/avx2/quads_ymm.h"
#include "kernels/avxvnni/avxvnni_kernels.h"
#include "kernels/avxvnni/dpbusd.h"
#include "kernels/depthwise_quads_walk.h"

namespace qnnpy {
namespace {

template <VnniEncoding E>
struct DpbusdDot4 {
  static __m256i apply(__m256i acc, __m256i x, __m256i w) { return dpbusd<E>(acc, x, w); }
};
template <VnniEncoding E>
using Ymm = QuadsYmm<DpbusdDot4<E>>;

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
