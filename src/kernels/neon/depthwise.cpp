// NEON depthwise row kernel, 8 channels a step. Per pair of taps, ld2 splits the packed
// weight pairs (w_t1[c], w_t2[c]) into one int16 vector per tap; the taps' input bytes are
// widened to int16 (uxtl / sxtl) and smlal / smlal2 multiply-accumulate them into int32
// (|x| <= 255 and |w| <= 255: a product needs 17 bits, so it is formed in int32: exact).
// The last c % 8 channels take the scalar formula.
#include <arm_neon.h>

#include <vector>

#include "kernels/neon/neon_kernels.h"
#include "kernels/scalar/load_store.h"

namespace qnnpy {
namespace {

template <bool kSigned>
inline int16x8_t load_widened(const uint8_t* p) {
  return kSigned ? vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(p))) : vreinterpretq_s16_u16(vmovl_u8(vld1_u8(p)));
}

template <bool kSigned>
void row(const uint8_t* x, const DepthwiseRow& s, const int16_t* w_pairs, int32_t* acc) {
  const int64_t taps = s.kh * s.kw, pairs = (taps + 1) / 2, vec_c = s.c / 8 * 8;
  int64_t off_small[64];
  std::vector<int64_t> off_large(taps > 64 ? static_cast<size_t>(taps) : 0);
  int64_t* off = taps > 64 ? off_large.data() : off_small;
  for (int64_t t = 0; t < taps; ++t) off[t] = (t / s.kw) * s.dh * s.row_stride + (t % s.kw) * s.dw * s.c;
  for (int64_t ox = 0; ox < s.ow; ++ox) {
    const uint8_t* base = x + ox * s.sw * s.c;
    int32_t* out = acc + ox * s.c;
    for (int64_t ch = 0; ch < vec_c; ch += 8) {
      int32x4_t lo = vdupq_n_s32(0), hi = lo;
      for (int64_t p = 0; p < pairs; ++p) {
        const int16x8x2_t w = vld2q_s16(w_pairs + (p * s.c + ch) * 2);
        const int16x8_t x1 = load_widened<kSigned>(base + off[2 * p] + ch);
        lo = vmlal_s16(lo, vget_low_s16(x1), vget_low_s16(w.val[0]));
        hi = vmlal_high_s16(hi, x1, w.val[0]);
        if (2 * p + 1 < taps) {
          const int16x8_t x2 = load_widened<kSigned>(base + off[2 * p + 1] + ch);
          lo = vmlal_s16(lo, vget_low_s16(x2), vget_low_s16(w.val[1]));
          hi = vmlal_high_s16(hi, x2, w.val[1]);
        }
      }
      vst1q_s32(out + ch, lo);
      vst1q_s32(out + ch + 4, hi);
    }
    for (int64_t ch = vec_c; ch < s.c; ++ch) {
      int32_t sum = 0;
      for (int64_t t = 0; t < taps; ++t) sum += load_q(base + off[t], ch, kSigned) * w_pairs[((t / 2) * s.c + ch) * 2 + t % 2];
      out[ch] = sum;
    }
  }
}

}  // namespace

void depthwise_row_neon(const uint8_t* x, const DepthwiseRow& s, bool is_signed, const int16_t* w_pairs, int32_t* acc) {
  if (is_signed) {
    row<true>(x, s, w_pairs, acc);
  } else {
    row<false>(x, s, w_pairs, acc);
  }
}

}  // namespace qnnpy
