#include "runtime/im2col.h"

#include <algorithm>
#include <cstring>

namespace qnnpy {
namespace {

// Copies [0, n) with two moves of `kSize` bytes (the second overlapping the first), for
// kSize <= n <= 2 kSize: constant sizes the compiler inlines, where a memcpy of a
// variable size would be a library call per tap.
template <int kSize>
inline void copy_two_moves(const uint8_t* src, int64_t n, uint8_t* dst) {
  std::memcpy(dst, src, kSize);
  std::memcpy(dst + n - kSize, src + n - kSize, kSize);
}

// memcpy with the spans of small-channel convs inlined: the contiguous taps of ResNet's
// first conv (7 x 3 = 21 bytes), of MobileNetV2's (3 x 3 = 9 bytes), single taps of 3 channels.
inline void copy_bytes(const uint8_t* src, int64_t n, uint8_t* dst) {
  if (n > 32) {
    std::memcpy(dst, src, static_cast<size_t>(n));
  } else if (n >= 16) {
    copy_two_moves<16>(src, n, dst);
  } else if (n >= 8) {
    copy_two_moves<8>(src, n, dst);
  } else if (n >= 4) {
    copy_two_moves<4>(src, n, dst);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// The walk both paths share: for rows [r0, r1) of one group, the kh x kw window of
// each output pixel, channels-last. `copy(src, n, dst)` moves n input values, taps
// outside the image get `pad`, and the row is zero-filled from k to `row_len`.
template <class T, class Copy>
void im2col_rows(const uint8_t* x, const ConvGeometry& g, const PreparedLayer& L, int64_t group, int64_t r0, int64_t r1,
                 int64_t row_len, T pad, Copy copy, T* a) {
  const int64_t cg = L.cin_per_group, c0 = group * cg;
  // The output pixel (b, oy, ox) of row r, stepped along with r (no divisions per row).
  int64_t b = r0 / (g.oh * g.ow), oy = (r0 / g.ow) % g.oh, ox = r0 % g.ow;
  for (int64_t r = r0; r < r1; ++r, ++ox) {
    if (ox == g.ow) {
      ox = 0;
      if (++oy == g.oh) oy = 0, ++b;
    }
    T* dst = a + (r - r0) * row_len;
    for (int64_t ky = 0; ky < L.kh; ++ky) {
      const int64_t iy = oy * L.sh - L.ph + ky * L.dh;
      if (iy < 0 || iy >= g.h) {
        std::fill(dst, dst + L.kw * cg, pad);
        dst += L.kw * cg;
        continue;
      }
      const uint8_t* src_row = x + (b * g.h + iy) * g.w * g.cin + c0;
      const int64_t ix0 = ox * L.sw - L.pw;
      if (cg == g.cin && L.dw == 1 && ix0 >= 0 && ix0 + L.kw <= g.w) {
        // One group, dense taps inside the image: the kw taps are one contiguous span.
        copy(src_row + ix0 * g.cin, L.kw * cg, dst);
        dst += L.kw * cg;
        continue;
      }
      for (int64_t kx = 0; kx < L.kw; ++kx, dst += cg) {
        const int64_t ix = ix0 + kx * L.dw;
        if (ix < 0 || ix >= g.w) {
          std::fill(dst, dst + cg, pad);
        } else {
          copy(src_row + ix * g.cin, cg, dst);
        }
      }
    }
    std::fill(dst, a + (r - r0 + 1) * row_len, T{0});
  }
}

}  // namespace

void im2col_s16(const uint8_t* x, bool is_signed, const ConvGeometry& g, const PreparedLayer& L, int64_t group,
                int64_t r0, int64_t r1, int16_t* a) {
  const int32_t zx = L.input_zp;
  if (is_signed) {
    im2col_rows<int16_t>(x, g, L, group, r0, r1, L.kp, 0, [zx](const uint8_t* src, int64_t n, int16_t* dst) {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int16_t>(static_cast<int8_t>(src[i]) - zx);
    }, a);
  } else {
    im2col_rows<int16_t>(x, g, L, group, r0, r1, L.kp, 0, [zx](const uint8_t* src, int64_t n, int16_t* dst) {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int16_t>(src[i] - zx);
    }, a);
  }
}

void im2col_u8(const uint8_t* x, const ConvGeometry& g, const PreparedLayer& L, int64_t group, int64_t r0, int64_t r1,
               uint8_t* a) {
  im2col_rows<uint8_t>(x, g, L, group, r0, r1, L.kq, static_cast<uint8_t>(L.input_zp),
                       [](const uint8_t* src, int64_t n, uint8_t* dst) { copy_bytes(src, n, dst); }, a);
}

}  // namespace qnnpy
