// Scalar planes-to-pixels interleave (NCHW blocks to NHWC), the reference of interleave_planes.
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

// kC > 0 fixes the channel count at compile time (images: 3), so the channel loop unrolls into
// straight moves.
template <int kC>
void interleave(const uint8_t* planes, int64_t plane_stride, int64_t pixels, int64_t c, uint8_t* dst) {
  const int64_t channels = kC > 0 ? kC : c;
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t ch = 0; ch < channels; ++ch) *dst++ = planes[ch * plane_stride + p];
}

}  // namespace

void interleave_planes_scalar(const uint8_t* planes, int64_t plane_stride, int64_t pixels, int64_t c, uint8_t* dst) {
  if (c == 3) return interleave<3>(planes, plane_stride, pixels, c, dst);
  interleave<0>(planes, plane_stride, pixels, c, dst);
}

}  // namespace qnnpy
