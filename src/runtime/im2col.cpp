#include "runtime/im2col.h"

#include <algorithm>
#include <cstring>

namespace qnnpy {
namespace {

// memcpy with the 16..32-byte case inlined as two overlapping 16-byte moves (the
// contiguous taps of a small-channel conv such as ResNet's first, 7 x 3 = 21 bytes).
inline void copy_bytes(uint8_t* dst, const uint8_t* src, int64_t n) {
  if (n >= 16 && n <= 32) {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else {
    std::memcpy(dst, src, static_cast<size_t>(n));
  }
}

}  // namespace

void im2col_s16(const uint8_t* x, bool is_signed, const ConvGeometry& g, const PreparedLayer& L, int64_t group,
                int64_t r0, int64_t r1, int16_t* a) {
  const int64_t cg = L.cin_per_group, c0 = group * cg;
  auto convert = [&](const uint8_t* src, int64_t n, int16_t* dst) {
    if (is_signed) {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int16_t>(static_cast<int8_t>(src[i]) - L.input_zp);
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int16_t>(src[i] - L.input_zp);
    }
  };
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r / (g.oh * g.ow), oy = (r / g.ow) % g.oh, ox = r % g.ow;
    int16_t* dst = a + (r - r0) * L.kp;
    for (int64_t ky = 0; ky < L.kh; ++ky) {
      const int64_t iy = oy * L.sh - L.ph + ky * L.dh;
      if (iy < 0 || iy >= g.h) {
        std::fill(dst, dst + L.kw * cg, int16_t{0});
        dst += L.kw * cg;
        continue;
      }
      const uint8_t* src_row = x + (b * g.h + iy) * g.w * g.cin + c0;
      const int64_t ix0 = ox * L.sw - L.pw;
      if (cg == g.cin && L.dw == 1 && ix0 >= 0 && ix0 + L.kw <= g.w) {
        convert(src_row + ix0 * g.cin, L.kw * cg, dst);  // contiguous taps, as in im2col_u8
        dst += L.kw * cg;
        continue;
      }
      for (int64_t kx = 0; kx < L.kw; ++kx, dst += cg) {
        const int64_t ix = ix0 + kx * L.dw;
        if (ix < 0 || ix >= g.w) {
          std::fill(dst, dst + cg, int16_t{0});
        } else {
          convert(src_row + ix * g.cin, cg, dst);
        }
      }
    }
    if (L.kp > L.k) *dst = 0;
  }
}

void im2col_u8(const uint8_t* x, const ConvGeometry& g, const PreparedLayer& L, int64_t group, int64_t r0, int64_t r1,
               uint8_t* a) {
  const int64_t cg = L.cin_per_group, c0 = group * cg;
  const uint8_t zx = static_cast<uint8_t>(L.input_zp);
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r / (g.oh * g.ow), oy = (r / g.ow) % g.oh, ox = r % g.ow;
    uint8_t* dst = a + (r - r0) * L.kq;
    for (int64_t ky = 0; ky < L.kh; ++ky) {
      const int64_t iy = oy * L.sh - L.ph + ky * L.dh;
      if (iy < 0 || iy >= g.h) {
        std::memset(dst, zx, L.kw * cg);
        dst += L.kw * cg;
        continue;
      }
      const uint8_t* src_row = x + (b * g.h + iy) * g.w * g.cin + c0;
      const int64_t ix0 = ox * L.sw - L.pw;
      if (cg == g.cin && L.dw == 1 && ix0 >= 0 && ix0 + L.kw <= g.w) {
        // One group, dense taps inside the image: the kw taps are one contiguous span.
        copy_bytes(dst, src_row + ix0 * g.cin, L.kw * cg);
        dst += L.kw * cg;
        continue;
      }
      for (int64_t kx = 0; kx < L.kw; ++kx, dst += cg) {
        const int64_t ix = ix0 + kx * L.dw;
        if (ix < 0 || ix >= g.w) {
          std::memset(dst, zx, cg);
        } else {
          std::memcpy(dst, src_row + ix * g.cin, cg);
        }
      }
    }
    std::memset(dst, 0, L.kq - L.k);
  }
}

}  // namespace qnnpy
