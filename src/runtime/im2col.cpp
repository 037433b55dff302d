#include "runtime/im2col.h"

#include <algorithm>
#include <cstring>

namespace qnnpy {
namespace {

// memcpy with the 16..32-byte case inlined as two overlapping 16-byte moves (the
// contiguous taps of a small-channel conv such as ResNet's first, 7 x 3 = 21 bytes).
inline void copy_bytes(const uint8_t* src, int64_t n, uint8_t* dst) {
  if (n >= 16 && n <= 32) {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else {
    std::memcpy(dst, src, static_cast<size_t>(n));
  }
}

// The walk both paths share: for rows [r0, r1) of one group, the kh x kw window of
// each output pixel, channels-last. `copy(src, n, dst)` moves n input values, taps
// outside the image get `pad`, and the row is zero-filled from k to `row_len`.
template <class T, class Copy>
void im2col_rows(const uint8_t* x, const ConvGeometry& g, const PreparedLayer& L, int64_t group, int64_t r0, int64_t r1,
                 int64_t row_len, T pad, Copy copy, T* a) {
  const int64_t cg = L.cin_per_group, c0 = group * cg;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r / (g.oh * g.ow), oy = (r / g.ow) % g.oh, ox = r % g.ow;
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
