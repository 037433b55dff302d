// AVX2 window columns (kernels.h, KernelSet::window_columns) for 3-channel inputs and windows of up
// to 8 rows (the RGB first convs), 8 pixels at a time: each row's 24 bytes are spread to one pixel
// per 32-bit lane (vpshufb; lanes 0-3 and 4-7 hold pixels 0-3 and 4-7), the 8 x 8 lanes of rows by
// pixels are transposed (vpunpck{l,h}dq, vpunpck{l,h}qdq), and each pixel's rows 0-3 and 4-7 are
// packed back to 3 bytes a row and stored as 16 bytes each, the second store 12 bytes after the
// first; the bytes past a pixel's kh * 3 are rewritten by the next pixel (or lie past dst's end).
// Other channel counts, taller windows and the last pixels of a row go the scalar way.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

namespace {

// The pixels [px, px + 8) of rows[0-3] (kHigh: rows[0-7]) to d, `pixel` bytes per pixel.
template <bool kHigh>
inline void eight_pixels(const uint8_t* const* rows, int64_t px, int64_t pixel, uint8_t* d) {
  constexpr int kRows = kHigh ? 8 : 4;
  // Bytes 3p..3p+2 to lane p (zero in its top byte); and back: the low 3 bytes of each lane.
  const __m256i spread = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                                          0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
  const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,  //
                                        0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  __m256i e[kRows];
#pragma GCC unroll 8
  for (int ky = 0; ky < kRows; ++ky) {
    const uint8_t* p = rows[ky] + px * 3;  // pixels 0-3 at p, 4-7 at p + 12
    const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 12));
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1);
    e[ky] = _mm256_shuffle_epi8(v, spread);
  }
  // u[q] (q < 4): rows 0-3 of pixels q (low half) and q + 4 (high half); u[4 + q]: rows 4-7.
  __m256i u[kRows];
#pragma GCC unroll 2
  for (int half = 0; half < kRows / 4; ++half) {
    const __m256i* r = e + 4 * half;
    const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    __m256i* out = u + 4 * half;
    out[0] = _mm256_shuffle_epi8(_mm256_unpacklo_epi64(t0, t2), pack);
    out[1] = _mm256_shuffle_epi8(_mm256_unpackhi_epi64(t0, t2), pack);
    out[2] = _mm256_shuffle_epi8(_mm256_unpacklo_epi64(t1, t3), pack);
    out[3] = _mm256_shuffle_epi8(_mm256_unpackhi_epi64(t1, t3), pack);
  }
  // Pixels 0-3 from the low halves, then 4-7 from the high ones, in order (each pixel's stores run
  // past it into the next one's bytes, which that pixel then rewrites). (4 + q) % kRows is 4 + q
  // where it is used (kHigh), and keeps the index in range where it is not.
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q, d += pixel) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm256_castsi256_si128(u[q]));
    if (kHigh) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 12), _mm256_castsi256_si128(u[(4 + q) % kRows]));
  }
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q, d += pixel) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm256_extracti128_si256(u[q], 1));
    if (kHigh) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 12), _mm256_extracti128_si256(u[(4 + q) % kRows], 1));
  }
}

}  // namespace

void window_columns_avx2(const uint8_t* const* rows, int64_t kh, int64_t c, int64_t width, uint8_t* dst) {
  if (c != 3 || kh > 8) return window_columns_scalar(rows, kh, c, width, dst);
  // Rows past kh repeat row kh - 1: their bytes land past each pixel's kh * 3 and are rewritten.
  const uint8_t* eight[8];
  for (int64_t ky = 0; ky < 8; ++ky) eight[ky] = rows[std::min(ky, kh - 1)];
  const int64_t pixel = kh * 3;
  // A step reads a row's bytes [3 px, 3 px + 28) (its 8 pixels and 4 bytes more): steps stop where
  // that would pass the row's width * 3 bytes, and the scalar loop does the rest.
  int64_t px = 0;
  if (kh > 4) {
    for (; px + 10 <= width; px += 8) eight_pixels<true>(eight, px, pixel, dst + px * pixel);
  } else {
    for (; px + 10 <= width; px += 8) eight_pixels<false>(eight, px, pixel, dst + px * pixel);
  }
  const uint8_t* rest[8];
  for (int64_t ky = 0; ky < kh; ++ky) rest[ky] = rows[ky] + px * 3;
  window_columns_scalar(rest, kh, 3, width - px, dst + px * pixel);
}

}  // namespace qnnpy
