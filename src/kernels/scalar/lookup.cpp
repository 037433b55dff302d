// Scalar table lookup and quantized multiply.
#include "kernels/rounding.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void lookup_scalar(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = table[x[i]];
}

// PyTorch qmul_kernel / requantize_from_int: the int32 product, one float
// multiply, round half to even (lrintf in its scalar lanes, cvtps in its vector lanes).
int32_t mul_one(int32_t qa, int32_t qb, const MulParams& p) {
  const int32_t prod = (qa - p.a_zp) * (qb - p.b_zp);
  const int64_t y = int64_t{cvtps_epi32(static_cast<float>(prod) * p.mult)} + p.out_zp;
  return clamp_i32(y, p.lo, p.hi);
}

void mul_scalar(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const MulParams& p, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) store_q(out, i, mul_one(load_q(a, i, is_signed), load_q(b, i, is_signed), p));
}

}  // namespace qnnpy
