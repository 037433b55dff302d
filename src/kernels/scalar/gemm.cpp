// Scalar reference GEMM (exact int16 x int16 -> int32) and depthwise conv.
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void gemm_s16_scalar(const int16_t* a, int64_t m, int64_t kp, const int16_t* b_packed, int64_t n, int32_t* c,
                     int64_t ldc) {
  const int64_t pairs = kp / 2;
  for (int64_t i = 0; i < m; ++i) {
    const int16_t* row = a + i * kp;
    for (int64_t j = 0; j < n; ++j) {
      const int16_t* col = b_packed + (j / kGemmNR) * pairs * 2 * kGemmNR + 2 * (j % kGemmNR);
      int32_t acc = 0;
      for (int64_t p = 0; p < pairs; ++p) {
        acc += int32_t{row[2 * p]} * col[p * 2 * kGemmNR] + int32_t{row[2 * p + 1]} * col[p * 2 * kGemmNR + 1];
      }
      c[i * ldc + j] = acc;
    }
  }
}

void depthwise_s16_scalar(const int16_t* x, const Pool2dShape& s, const int16_t* w, int32_t* acc) {
  const int64_t hp = s.h + 2 * s.ph, wp = s.w + 2 * s.pw;
  for (int64_t b = 0; b < s.n; ++b) {
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        int32_t* out = acc + ((b * s.oh + oy) * s.ow + ox) * s.c;
        for (int64_t ch = 0; ch < s.c; ++ch) out[ch] = 0;
        for (int64_t ky = 0; ky < s.kh; ++ky) {
          for (int64_t kx = 0; kx < s.kw; ++kx) {
            const int64_t iy = oy * s.sh + ky * s.dh, ix = ox * s.sw + kx * s.dw;
            const int16_t* in = x + ((b * hp + iy) * wp + ix) * s.c;
            const int16_t* tap = w + (ky * s.kw + kx) * s.c;
            for (int64_t ch = 0; ch < s.c; ++ch) out[ch] += int32_t{in[ch]} * tap[ch];
          }
        }
      }
    }
  }
}

}  // namespace qnnpy
