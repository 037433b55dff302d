// The fixed-point requantization of integer-only hardware: TFLite's reference kernels
// (tensorflow/lite/kernels/internal/common.h, MultiplyByQuantizedMultiplier, the classic
// double-rounding variant, i.e. built without TFLITE_SINGLE_ROUNDING), whose two steps
// are gemmlowp's (fixedpoint/fixedpoint.h); CMSIS-NN's arm_nn_requantize is the same.
//
// A real multiplier m > 0 is stored as a Q31 int32 M0 and a power-of-two exponent:
//   m ~= M0 * 2^(shift - 31),  M0 in [2^30, 2^31) (or M0 = 0 for m = 0 or m < ~2^-32).
// Applying it to an int32 x:
//   x' = x * 2^max(shift, 0)                     (int32, wrapping)
//   h  = SaturatingRoundingDoublingHighMul(x', M0) = floor((x' * M0 + 2^30) / 2^31) in int64,
//        except x' = M0 = INT32_MIN, which gives INT32_MAX. gemmlowp writes it with a nudge of
//        2^30 or 1 - 2^30 and a division truncating toward zero: ties round toward +infinity
//        (0.5 -> 1, -0.5 -> 0, -1.5 -> -1), not away from zero.
//   y  = RoundingDivideByPOT(h, e), e = max(-shift, 0) in [0, 31]:
//        (h >> e) + (r > t), r = h & (2^e - 1), t = (2^e - 1) >> 1 plus 1 when h < 0,
//        which is h / 2^e rounded to nearest with ties away from zero.
#pragma once

#include <cstdint>

namespace qnnpy {

struct QuantizedMultiplier {
  int32_t multiplier;  // M0, Q31
  int32_t shift;       // in [-31, 30]
};

// TFLite's QuantizeMultiplier (tensorflow/lite/kernels/internal/quantization_util.cc):
// frexp(m) = q * 2^shift with q in [0.5, 1); M0 = round(q * 2^31) with std::round (ties away
// from zero); M0 = 2^31 becomes 2^30 with shift + 1; shift < -31 flushes to M0 = 0, shift = 0.
// Throws std::invalid_argument for a negative, NaN or infinite m, and when the shift would
// exceed 30 (m >= about 2^30: the left shift x * 2^shift would need 2^31).
QuantizedMultiplier quantize_multiplier(double m);

// The real multiplier of a conv/linear layer, as TFLite's PopulateConvolutionQuantizationParams
// (tensorflow/lite/kernels/kernel_util.cc) computes it: the float scales widened to double,
// m = (double(s_x) * double(s_w)) / double(s_y), both operations in double.
inline double conv_real_multiplier(float s_x, float s_w, float s_y) {
  return static_cast<double>(s_x) * static_cast<double>(s_w) / static_cast<double>(s_y);
}

inline int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  const int64_t ab = int64_t{a} * int64_t{b};
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : 1 - (int64_t{1} << 30);
  return static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));  // truncates toward zero
}

inline int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

inline int32_t multiply_by_quantized_multiplier(int32_t x, int32_t multiplier, int32_t shift) {
  const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  const int32_t scaled = static_cast<int32_t>(static_cast<uint32_t>(x) << left);  // wraps as int32
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scaled, multiplier), right);
}

}  // namespace qnnpy
