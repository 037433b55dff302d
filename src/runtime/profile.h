// Named arithmetic profiles of the integer runtime.
//
// int32_bias  The canonical meaning of qnnpy's params, identical to PyTorch's
//             qnnpack engine (quint8):
//             conv/linear  acc = sum (x - zx)(w - zw) + bias_q[c]   (exact int32)
//                          y = cvtps(fl(float(acc) * m[c])) + zy,
//                          m[c] = fl(fl(s_w[c] * s_x) * fl(1 / s_y))
//             add          QNNPACK's fixed-point add (kernels/scalar/elementwise.cpp)
//             avg pool     m = fl(s_in / fl(s_out * count)) when the windows tile the input
// fbgemm      PyTorch's fbgemm engine (exact when its u8 x s8 pairs do not saturate):
//             conv/linear  t = fl(float(acc) + fl(bias[c] / a[c])), a[c] = fl(s_x * s_w[c])
//                          (per-tensor weights: bias[c] * float(1.0 / double(a)))
//                          y = cvtps(fl(t * fl(a[c] / s_y))) + zy
//             add          dequantize both in float (fma in PyTorch's vector lanes), add,
//                          y = cvtps(fl(c * fl(1 / s_out))) + zy
//             avg pool     channels_last: acc = sum - zp * count, m = fl(fl(s_in / s_out) / count),
//                          y = zp + rne(acc * fl(1 / fl(1 / m))); contiguous: rne(sum * fl(fl(1 / kh) / kw))
// fixed_point The requantization of integer-only hardware (TFLite reference kernels,
//             gemmlowp, CMSIS-NN), formulas in kernels/fixed_point.h:
//             conv/linear  acc = sum (x - zx)(w - zw) + bias_q[c]   (exact int32, bias_q as int32_bias)
//                          (M0[c], shift[c]) = QuantizeMultiplier(m[c]),
//                          m[c] = double(s_x) * double(s_w[c]) / double(s_y)   (in double)
//                          y = MultiplyByQuantizedMultiplier(acc, M0[c], shift[c]) + zy
//                          (TFLite's double-rounding variant: acc * 2^max(shift, 0), rounding
//                          doubling high multiply by M0, rounding divide by 2^max(-shift, 0))
//             conv_transpose2d is conv2d's (runtime/conv_transpose.h)
//             other ops    as int32_bias, formula by formula (add: QNNPACK's fixed-point add;
//                          avg pools, hardswish / hardsigmoid / sigmoid tables: the int32_bias
//                          rules), chosen by follows_int32_bias_rules. Not yet so in
//                          runtime/ops/pool_ops.cpp and unary_tables.cpp, which still test
//                          == Int32Bias (a strict xfail in tests/test_fixed_point.py says so)
// All: fused ReLU clamps at zy; results saturate to the output dtype; quantize is
// clamp(rne(x * fl(1 / s)) + z); dequantize is s * float(q - z); relu / max pool / reshape are exact.
#pragma once

#include <string>

namespace qnnpy {

enum class Profile { Int32Bias, Fbgemm, FixedPoint };

// Whether ops other than conv/linear/conv_transpose2d take the int32_bias (qnnpack) formulas
// under `p`: fixed_point changes only the weighted layers' requantization.
inline bool follows_int32_bias_rules(Profile p) { return p != Profile::Fbgemm; }

Profile parse_profile(const std::string& name);
const char* profile_name(Profile p);

}  // namespace qnnpy
