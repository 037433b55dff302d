// Scalar references of the depthwise kernels: the row kernel and the quads of rows (exact int32 sums).
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void depthwise_row_scalar(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs,
                          int32_t* acc) {
  const int64_t taps = s.kh * s.kw;
  for (int64_t ox = 0; ox < s.ow; ++ox)
    for (int64_t ch = 0; ch < s.c; ++ch) {
      int32_t sum = 0;
      for (int64_t t = 0; t < taps; ++t) {
        const uint8_t* in = x + (t / s.kw) * s.dh * s.row_stride + (ox * s.sw + (t % s.kw) * s.dw) * s.c;
        sum += load_q(in, ch, is_signed) * w_pairs[((t / 2) * s.c + ch) * 2 + t % 2];
      }
      acc[ox * s.c + ch] = sum;
    }
}

int64_t interleave4_scalar(const uint8_t* const* rows, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags) {
  const int64_t blocks = (n + kClampBlock - 1) / kClampBlock;
  int64_t flagged = 0;
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t b = 0; b < blocks; ++b) {
      bool over = false;
      for (int64_t i = b * kClampBlock; i < n && i < (b + 1) * kClampBlock; ++i) {
        const uint8_t x = rows[j] ? rows[j][i] : 0;
        over |= x > bound;
        out[4 * i + j] = x > bound ? bound : x;
      }
      flags[j * blocks + b] = over;
      flagged += over;
    }
  return flagged;
}

void depthwise_quads_channels(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                              int32_t* const* acc, int64_t ch0, int64_t ch1) {
  for (int r = 0; r < rows; ++r)
    for (int64_t ox = 0; ox < s.ow; ++ox)
      for (int64_t ch = ch0; ch < ch1; ++ch) {
        int32_t sum = 0;
        for (int64_t g = 0; g < s.groups; ++g)
          for (int64_t kx = 0; kx < s.kw; ++kx) {
            const uint8_t* x = z + g * s.group_stride + ((ox * s.sw + kx * s.dw) * s.c + ch) * 4;
            const int8_t* wq = w[r] + ((g * s.kw + kx) * s.c + ch) * 4;
            for (int j = 0; j < 4; ++j) sum += int32_t{x[j]} * wq[j];
          }
        acc[r][ox * s.c + ch] = sum;
      }
}

void depthwise_quads_scalar(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                            int32_t* const* acc) {
  depthwise_quads_channels(z, s, rows, w, acc, 0, s.c);
}

}  // namespace qnnpy
