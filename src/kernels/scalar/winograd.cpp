// Scalar reference of the Winograd F(2x2, 3x3) transforms (formulas in kernels.h).
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void winograd_input_channel(const uint8_t* x, const WinogradInput& s, int64_t t, int64_t ch, int16_t* v) {
  int32_t d[4][4], r[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const uint8_t byte = x[i * s.row_stride + (2 * t + j) * s.c + ch];
      d[i][j] = (s.is_signed ? int32_t{static_cast<int8_t>(byte)} : int32_t{byte}) - s.zx;
    }
  for (int j = 0; j < 4; ++j) {  // B^T d
    r[0][j] = d[0][j] - d[2][j];
    r[1][j] = d[1][j] + d[2][j];
    r[2][j] = d[2][j] - d[1][j];
    r[3][j] = d[1][j] - d[3][j];
  }
  for (int i = 0; i < 4; ++i) {  // (B^T d) B
    const int32_t row[4] = {r[i][0] - r[i][2], r[i][1] + r[i][2], r[i][2] - r[i][1], r[i][1] - r[i][3]};
    for (int j = 0; j < 4; ++j) v[(4 * i + j) * s.plane + t * s.c + ch] = static_cast<int16_t>(row[j]);
  }
}

void winograd_output_channel(const int32_t* m, const WinogradOutput& s, int64_t t, int64_t ch, int32_t* y) {
  // Wrapping int32 arithmetic (uint32): only the final 4 Y is known to fit.
  uint32_t mm[4][4], r[2][4];
  for (int e = 0; e < 16; ++e) mm[e / 4][e % 4] = static_cast<uint32_t>(m[e * s.plane + t * s.n + ch]);
  for (int j = 0; j < 4; ++j) {  // A^T M
    r[0][j] = mm[0][j] + mm[1][j] + mm[2][j];
    r[1][j] = mm[1][j] - mm[2][j] - mm[3][j];
  }
  for (int a = 0; a < 2; ++a) {  // (A^T M) A, then / 4
    const uint32_t out[2] = {r[a][0] + r[a][1] + r[a][2], r[a][1] - r[a][2] - r[a][3]};
    for (int b = 0; b < 2; ++b) y[a * s.y_row + (2 * t + b) * s.n + ch] = static_cast<int32_t>(out[b]) >> 2;
  }
}

void winograd_input_scalar(const uint8_t* x, const WinogradInput& s, int16_t* v) {
  for (int64_t t = 0; t < s.tiles; ++t)
    for (int64_t ch = 0; ch < s.c; ++ch) winograd_input_channel(x, s, t, ch, v);
}

void winograd_output_scalar(const int32_t* m, const WinogradOutput& s, int32_t* y) {
  for (int64_t t = 0; t < s.tiles; ++t)
    for (int64_t ch = 0; ch < s.n; ++ch) winograd_output_channel(m, s, t, ch, y);
}

}  // namespace qnnpy
