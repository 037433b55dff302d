// AVX2 Winograd F(2x2, 3x3) transforms (formulas in kernels.h): the input transform on 16
// channels of int16 at a time, the output transform on 8 channels of int32 (wrapping adds,
// as the scalar twin's uint32 arithmetic); the channels left over go to the scalar twin.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void winograd_input_avx2(const uint8_t* x, const WinogradInput& s, int16_t* v) {
  const __m256i zx = _mm256_set1_epi16(static_cast<int16_t>(s.zx));
  const int64_t c16 = s.c / 16 * 16;
  for (int64_t t = 0; t < s.tiles; ++t) {
    for (int64_t ch = 0; ch < c16; ch += 16) {
      __m256i d[4][4], r[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const __m128i bytes =
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i * s.row_stride + (2 * t + j) * s.c + ch));
          d[i][j] = _mm256_sub_epi16(s.is_signed ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes), zx);
        }
      for (int j = 0; j < 4; ++j) {
        r[0][j] = _mm256_sub_epi16(d[0][j], d[2][j]);
        r[1][j] = _mm256_add_epi16(d[1][j], d[2][j]);
        r[2][j] = _mm256_sub_epi16(d[2][j], d[1][j]);
        r[3][j] = _mm256_sub_epi16(d[1][j], d[3][j]);
      }
      for (int i = 0; i < 4; ++i) {
        const __m256i row[4] = {_mm256_sub_epi16(r[i][0], r[i][2]), _mm256_add_epi16(r[i][1], r[i][2]),
                                _mm256_sub_epi16(r[i][2], r[i][1]), _mm256_sub_epi16(r[i][1], r[i][3])};
        for (int j = 0; j < 4; ++j)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + (4 * i + j) * s.plane + t * s.c + ch), row[j]);
      }
    }
    for (int64_t ch = c16; ch < s.c; ++ch) winograd_input_channel(x, s, t, ch, v);
  }
}

void winograd_output_avx2(const int32_t* m, const WinogradOutput& s, int32_t* y) {
  const int64_t n8 = s.n / 8 * 8;
  for (int64_t t = 0; t < s.tiles; ++t) {
    for (int64_t ch = 0; ch < n8; ch += 8) {
      __m256i mm[16];
      for (int e = 0; e < 16; ++e)
        mm[e] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m + e * s.plane + t * s.n + ch));
      __m256i r[2][4];
      for (int j = 0; j < 4; ++j) {
        r[0][j] = _mm256_add_epi32(_mm256_add_epi32(mm[j], mm[4 + j]), mm[8 + j]);
        r[1][j] = _mm256_sub_epi32(_mm256_sub_epi32(mm[4 + j], mm[8 + j]), mm[12 + j]);
      }
      for (int a = 0; a < 2; ++a) {
        const __m256i out0 = _mm256_add_epi32(_mm256_add_epi32(r[a][0], r[a][1]), r[a][2]);
        const __m256i out1 = _mm256_sub_epi32(_mm256_sub_epi32(r[a][1], r[a][2]), r[a][3]);
        int32_t* dst = y + a * s.y_row + 2 * t * s.n + ch;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_srai_epi32(out0, 2));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + s.n), _mm256_srai_epi32(out1, 2));
      }
    }
    for (int64_t ch = n8; ch < s.n; ++ch) winograd_output_channel(m, s, t, ch, y);
  }
}

}  // namespace qnnpy
