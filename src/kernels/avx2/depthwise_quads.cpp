// AVX2 depthwise conv over quads of interleaved input rows (kernels.h, DepthwiseQuads), 8
// channels per ymm: each 32-bit lane holds one channel's four row bytes; vpmaddubsw multiplies
// them with the quad's int8 weights into two int16 pair sums (exact under the caller's clamp)
// and vpmaddwd with ones adds the two into int32; the walk is kernels/depthwise_quads_walk.h.
// Also interleave4, which the avx512vnni set uses as well.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/quads_ymm.h"
#include "kernels/depthwise_quads_walk.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

// vpmaddubsw (two int16 pair sums, exact under the caller's clamp), then vpmaddwd with ones (the
// pair into int32).
struct MaddubsDot4 {
  static __m256i apply(__m256i acc, __m256i x, __m256i w) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), _mm256_set1_epi16(1)));
  }
};
using Ymm = QuadsYmm<MaddubsDot4>;

// kClamp: the bound is below 255 (otherwise no byte exceeds it and nothing is compared).
template <bool kClamp>
int64_t interleave4_blocks(const uint8_t* const* rows, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags) {
  static_assert(kClampBlock == 32, "one AVX2 vector per block");
  // In-lane unpacks interleave the low and the high 8 bytes of each 128-bit lane. Taking the
  // dwords in the order 0 2 4 6 | 1 3 5 7 first makes the two unpack rounds (bytes, then byte
  // pairs) come out in channel order: channels 0-7, 8-15, 16-23, 24-31 as four quads each.
  const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256i vb = _mm256_set1_epi8(static_cast<char>(bound));
  const int64_t blocks = (n + kClampBlock - 1) / kClampBlock;
  int64_t flagged = 0, b = 0;
  for (; (b + 1) * kClampBlock <= n; ++b) {
    const int64_t i = b * kClampBlock;
    __m256i v[4];
    for (int j = 0; j < 4; ++j) {
      bool over = false;
      if (rows[j] == nullptr) {
        v[j] = _mm256_setzero_si256();
      } else if (kClamp) {
        const __m256i x = Ymm::load(rows[j] + i), clamped = _mm256_min_epu8(x, vb);
        over = _mm256_movemask_epi8(_mm256_cmpeq_epi8(x, clamped)) != -1;
        v[j] = _mm256_permutevar8x32_epi32(clamped, order);
      } else {
        v[j] = _mm256_permutevar8x32_epi32(Ymm::load(rows[j] + i), order);
      }
      flags[j * blocks + b] = over;
      flagged += over;
    }
    const __m256i ab_lo = _mm256_unpacklo_epi8(v[0], v[1]), ab_hi = _mm256_unpackhi_epi8(v[0], v[1]);
    const __m256i cd_lo = _mm256_unpacklo_epi8(v[2], v[3]), cd_hi = _mm256_unpackhi_epi8(v[2], v[3]);
    __m256i* o = reinterpret_cast<__m256i*>(out + 4 * i);
    _mm256_storeu_si256(o, _mm256_unpacklo_epi16(ab_lo, cd_lo));
    _mm256_storeu_si256(o + 1, _mm256_unpackhi_epi16(ab_lo, cd_lo));
    _mm256_storeu_si256(o + 2, _mm256_unpacklo_epi16(ab_hi, cd_hi));
    _mm256_storeu_si256(o + 3, _mm256_unpackhi_epi16(ab_hi, cd_hi));
  }
  if (b < blocks) {  // the last, partial block
    const int64_t i = b * kClampBlock;
    const uint8_t* rest[4];
    for (int j = 0; j < 4; ++j) rest[j] = rows[j] ? rows[j] + i : nullptr;
    uint8_t last[4];
    flagged += interleave4_scalar(rest, n - i, bound, out + 4 * i, last);
    for (int j = 0; j < 4; ++j) flags[j * blocks + b] = last[j];
  }
  return flagged;
}

}  // namespace

void depthwise_quads_avx2(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                          int32_t* const* acc) {
  depthwise_quads_walk<Ymm, Ymm>(z, s, rows, w, acc);
}

int64_t interleave4_avx2(const uint8_t* const* rows, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags) {
  if (bound == 255) return interleave4_blocks<false>(rows, n, bound, out, flags);
  return interleave4_blocks<true>(rows, n, bound, out, flags);
}

}  // namespace qnnpy
