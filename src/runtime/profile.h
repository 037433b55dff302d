// Named arithmetic profiles of the integer runtime.
//
// int32_bias  The canonical meaning of qnnpy's params, identical to PyTorch's
//             qnnpack engine (quint8) except in the pools of `qnnpack` below:
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
//                          rules), chosen by follows_int32_bias_rules
// qnnpack    PyTorch's qnnpack engine, layer for layer: int32_bias, plus the pools QNNPACK runs
//             itself (aten/src/ATen/native/quantized/cpu/AveragePool2d.cpp qnnpack_avg_pool2d,
//             ReduceOps.cpp qnnpack_mean; the QNNPACK operators average-pooling.c and
//             global-average-pooling.c), on uint8 inputs:
//             avg pool     without ceil_mode: acc = sum over the in-bounds taps - zp * taps,
//                          m = fl(s_in / fl(s_out * kh * kw)) (count_include_pad and
//                          divisor_override are ignored: padded taps count), y = cvtps(fl(acc * m)) + zp
//             mean (H, W)  acc = sum - zp * H * W, m = fl(s_in / fl(s_out * H * W)), y = cvtps(fl(acc * m)) + zp
//             (measured against torch 1.13 and 2.14: QNNPACK's avgpool kernels requantize in fp32)
//             clamp        (relu6, hardtanh; qrelu.cpp qnnpack_clamp) of a channels_last input: the values are
//                          right but written in channels_last order into a contiguous tensor, so the output
//                          holds them scrambled; reproduced (PyTorch's bug: int32_bias computes the clamp right)
//             max pool     without ceil_mode (Pooling.cpp qnnpack_maxpool2d; QNNPACK's indirection.c clamps each
//                          max-pooling tap's coordinates to the image): a window tap outside the image reads the
//                          nearest edge pixel, which with dilation and padding may lie outside the window
// onednn     PyTorch's onednn engine on a CPU with AVX-512 VNNI and without AMX (oneDNN's brgemm / jit
//             int8 kernels): conv, conv_transpose2d and linear in oneDNN's order, every step one float32
//             rounding (kernels.h RequantParams): d = fl(fl(float(acc) * S_x) * S_w[c]) + bias[c];
//             y = cvtps(clamp(fl(fl(d * M) + zy), lo, hi)), with the constants PyTorch's reciprocal-scale
//             glue hands oneDNN: S_x = fl(1 / fl(1 / s_x)), M = fl(1 / fl(1 / fl(1 / s_y))), S_w[c] = s_w[c]
//             (linear: fl(1 / fl(1 / s_w[c]))); a fused ReLU clamps at zy. Every other op as fbgemm.
// onednn_amx  the same engine on a CPU with AMX-INT8, where oneDNN's AMX micro-kernels multiply by the
//             product fl(S_x * S_w[c]) at once: d = fl(float(acc) * fl(S_x * S_w[c])) + bias[c], except
//             depthwise convs (oneDNN's brdgmm kernel: the onednn order). Not reproduced: oneDNN's 1x1
//             convs with batch 1 on more than one thread, where its small-layer kernel takes the onednn order.
// x86         PyTorch's x86 engine (its default) on a CPU with AVX-512 VNNI and without AMX: each conv that
//             ATen's should_use_onednn_quant sends to oneDNN (weights symmetric, groups <= 100, for
//             conv_transpose2d per-tensor weights and no output padding) under onednn, the rest under
//             fbgemm (linears included: x86 packs them for FBGEMM).
// x86_amx     the same on a CPU with AMX-INT8: the oneDNN layers under onednn_amx.
// PT2E's quantized means and average pools (adaptive_avg_pool2d, avg_pool2d, mean; the node's float_mean
// flag): PyTorch's float dequantize -> pool or mean -> quantize in every profile (runtime/ops/pool_ops.cpp,
// aten_sum.h).
// All: fused ReLU clamps at zy; results saturate to the output dtype; quantize is
// clamp(rne(x * fl(1 / s)) + z); dequantize is s * float(q - z); relu / max pool / reshape are exact.
#pragma once

#include <string>

namespace qnnpy {

enum class Profile { Int32Bias, Fbgemm, FixedPoint, Qnnpack, Onednn, OnednnAmx, X86, X86Amx };

// Whether ops other than conv/linear/conv_transpose2d take the int32_bias (qnnpack) formulas
// under `p`: fixed_point changes only the weighted layers' requantization; the oneDNN and x86
// profiles run the ATen kernels PyTorch's fbgemm engine runs for every other op, as PyTorch does.
inline bool follows_int32_bias_rules(Profile p) {
  return p == Profile::Int32Bias || p == Profile::FixedPoint || p == Profile::Qnnpack;
}
// Whether `p` requantizes conv / linear in oneDNN's order (the x86 profiles: layer by layer,
// prepared_layer.h layer_profile).
inline bool is_onednn(Profile p) { return p == Profile::Onednn || p == Profile::OnednnAmx; }
// Whether the ops PyTorch's qnnpack engine hands to QNNPACK's own kernels on uint8 inputs
// (avg_pool2d, mean, clamp, max_pool2d) follow those kernels (qnnpack above).
inline bool follows_qnnpack_kernels(Profile p) { return p == Profile::Qnnpack; }

Profile parse_profile(const std::string& name);
const char* profile_name(Profile p);

}  // namespace qnnpy
