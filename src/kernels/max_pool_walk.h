// The window walk of the SIMD max-pool kernels (kernels.h, Pool2dShape), shared by the AVX2, AVX-512
// and NEON variants: every output pixel with the taps of its window that lie inside the image
// (taps_inside, per output row and column), so that no tap needs a bounds check. The scalar twin
// keeps its own per-tap checks. A template of the per-pixel body, so each ISA's translation unit
// (compiled with its own instruction-set flags) instantiates its own copy, as depthwise_walk.h.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/scalar/load_store.h"

namespace qnnpy {

// One output pixel's window: the taps [ky0, ky1) x [kx0, kx1) lie inside the image.
struct MaxPoolWindow {
  const uint8_t* image;  // the pixel's image, NHWC
  int64_t y0, x0;        // input row and column of the window's tap (0, 0), maybe in the padding
  int64_t ky0, ky1, kx0, kx1;

  // Channel 0 of the input row of taps ky, and the byte offset of tap column kx within a row: a
  // kernel takes the row once per ky, out of its loop over kx.
  const uint8_t* row(const Pool2dShape& s, int64_t ky) const { return image + (y0 + ky * s.dh) * s.w * s.c; }
  int64_t column(const Pool2dShape& s, int64_t kx) const { return (x0 + kx * s.dw) * s.c; }
};

// Calls pixel(window, dst) for every output pixel, dst its c output channels.
template <class Pixel>
void for_each_max_pool_window(const uint8_t* x, const Pool2dShape& s, uint8_t* out, Pixel pixel) {
  MaxPoolWindow win{};
  for (int64_t b = 0; b < s.n; ++b) {
    win.image = x + b * s.h * s.w * s.c;
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      win.y0 = oy * s.sh - s.ph;
      taps_inside(win.y0, s.dh, s.kh, s.h, win.ky0, win.ky1);
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        win.x0 = ox * s.sw - s.pw;
        taps_inside(win.x0, s.dw, s.kw, s.w, win.kx0, win.kx1);
        pixel(win, out + ((b * s.oh + oy) * s.ow + ox) * s.c);
      }
    }
  }
}

// Channels [first, s.c) of one window one by one: those a kernel's vectors leave.
template <bool kSigned>
void max_pool_channels_left(const MaxPoolWindow& win, const Pool2dShape& s, int64_t first, uint8_t* dst) {
  for (int64_t ch = first; ch < s.c; ++ch) {
    int32_t best = kSigned ? -128 : 0;
    for (int64_t ky = win.ky0; ky < win.ky1; ++ky)
      for (int64_t kx = win.kx0; kx < win.kx1; ++kx)
        best = std::max(best, load_q(win.row(s, ky) + win.column(s, kx), ch, kSigned));
    store_q(dst, ch, best);
  }
}

}  // namespace qnnpy
