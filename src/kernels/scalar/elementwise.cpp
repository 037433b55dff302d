// Scalar element-wise kernels: quantize, dequantize, add (float and fixed point), relu.
#include <cmath>

#include "kernels/rounding.h"
#include "kernels/scalar/load_store.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

// FBGEMM QuantizeAvx2: y = cvtps(min(x * inv, 2147483520)) + zp (int32 add), then clamp.
void quantize_scalar(const float* x, int64_t n, float inv_scale, int32_t zp, int32_t lo, int32_t hi, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    float t = std::fmin(x[i] * inv_scale, kQuantizeUpperBound);
    int32_t y = static_cast<int32_t>(static_cast<uint32_t>(cvtps_epi32(t)) + static_cast<uint32_t>(zp));
    store_q(out, i, clamp_i32(y, lo, hi));
  }
}

// fbgemm::Dequantize: scale * float(q - zp).
void dequantize_scalar(const uint8_t* q, int64_t n, bool is_signed, float scale, int32_t zp, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = scale * static_cast<float>(load_q(q, i, is_signed) - zp);
}

// PyTorch's qadd_kernel (fbgemm engine): dequantize both, add in float, relu,
// quantize with the reciprocal of the output scale.
int32_t add_float_one(int32_t qa, int32_t qb, const AddFloatParams& p, bool fma_dequant) {
  float da, db;
  if (fma_dequant) {
    da = std::fma(p.a_scale, static_cast<float>(qa), p.a_scale * -static_cast<float>(p.a_zp));
    db = std::fma(p.b_scale, static_cast<float>(qb), p.b_scale * -static_cast<float>(p.b_zp));
  } else {
    da = p.a_scale * static_cast<float>(qa - p.a_zp);
    db = p.b_scale * static_cast<float>(qb - p.b_zp);
  }
  float c = da + db;
  if (p.relu) c = std::fmax(c, 0.0f);
  float t = std::fmin(c * p.inv_out_scale, kQuantizeUpperBound);
  int32_t y = static_cast<int32_t>(static_cast<uint32_t>(cvtps_epi32(t)) + static_cast<uint32_t>(p.out_zp));
  return clamp_i32(y, p.lo, p.hi);
}

void add_float_scalar(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFloatParams& p,
                      uint8_t* out) {
  const int64_t vector_end = n - n % kTorchVectorBlock;
  for (int64_t i = 0; i < n; ++i) {
    store_q(out, i, add_float_one(load_q(a, i, is_signed), load_q(b, i, is_signed), p, i < vector_end));
  }
}

// QNNPACK q8vadd: acc = zp_term + a*a_mult + b*b_mult in wrapping int32, then an
// arithmetic shift rounding half away from zero, then + out_zp and clamp.
int32_t add_fixed_one(int32_t qa, int32_t qb, const AddFixedParams& p) {
  int32_t acc = static_cast<int32_t>(static_cast<uint32_t>(p.zp_term) + static_cast<uint32_t>(qa * p.a_mult) +
                                     static_cast<uint32_t>(qb * p.b_mult));
  const int32_t mask = static_cast<int32_t>((uint32_t{1} << p.shift) - 1);
  const int32_t threshold = mask >> 1;
  const int32_t remainder = (acc & mask) - (acc < 0 ? 1 : 0);
  const int32_t y = (acc >> p.shift) + (remainder > threshold ? 1 : 0);
  return clamp_i32(int64_t{y} + p.out_zp, p.lo, p.hi);
}

void add_fixed_scalar(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, const AddFixedParams& p,
                      uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) store_q(out, i, add_fixed_one(load_q(a, i, is_signed), load_q(b, i, is_signed), p));
}

void relu_scalar(const uint8_t* x, int64_t n, bool is_signed, int32_t zp, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    int32_t v = load_q(x, i, is_signed);
    store_q(out, i, v > zp ? v : zp);
  }
}

}  // namespace qnnpy
