#include "runtime/ops/unary_tables.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "kernels/rounding.h"

namespace qnnpy {
namespace {

// The 8-bit value a raw byte holds.
int32_t byte_value(int b, bool is_signed) { return is_signed ? static_cast<int8_t>(b) : b; }

// at::native::dequantize_val (fbgemm::Dequantize): fl(s * float(q - zp)).
float dequantize_scalar_lane(int32_t q, float s, int32_t zp) { return s * static_cast<float>(q - zp); }

// Vectorized<quint8>::dequantize(scale, zp, premul): fma(s, float(q), fl(s * -zp)).
float dequantize_vector_lane(int32_t q, float s, int32_t zp) {
  return std::fma(s, static_cast<float>(q), s * -static_cast<float>(zp));
}

// at::native::quantize_val (fbgemm::Quantize): zp + nearbyint(fl(v * fl(1 / s))), clamped.
int32_t quantize_scalar_lane(float v, float s, int32_t zp, int32_t lo, int32_t hi) {
  const double t = static_cast<double>(std::nearbyint(v * (1.0f / s))) + zp;
  // NaN (0 * inf where 1 / s overflows): fbgemm's clamp lets it through, and x86 converts it to the
  // 8-bit type through INT32_MIN, whose low byte is 0.
  if (std::isnan(t)) return 0;
  return static_cast<int32_t>(std::clamp<double>(t, lo, hi));
}

// Vectorized<quint8>::quantize (QuantizeAvx2) with the caller's inverse scale.
int32_t quantize_vector_lane(float v, float inv_scale, int32_t zp, int32_t lo, int32_t hi) {
  const float t = std::fmin(v * inv_scale, kQuantizeUpperBound);
  return clamp_i32(int64_t{cvtps_epi32(t)} + zp, lo, hi);
}

ByteTable table_of(bool is_signed, const std::function<int32_t(int32_t)>& f) {
  ByteTable t;
  for (int b = 0; b < 256; ++b) t[b] = static_cast<uint8_t>(f(byte_value(b, is_signed)));
  return t;
}

float hardswish(float x) { return (x * std::clamp(x + 3.0f, 0.0f, 6.0f)) / 6.0f; }
float hardsigmoid(float x) { return std::clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f; }

// PyTorch's element-wise kernels compute y = f(x) on the dequantized value: vector lanes
// dequantize with fma and quantize with `vector_inv` (each kernel's own reciprocal of
// s_out); the scalar tail uses dequantize_val and quantize_val.
UnaryTables pointwise_tables(const TableQuant& q, float vector_inv, const std::function<float(float)>& f) {
  const bool sgn = q.is_signed;
  return {table_of(sgn, [&](int32_t v) {
            return quantize_vector_lane(f(dequantize_vector_lane(v, q.in_scale, q.in_zp)), vector_inv, q.out_zp, q.lo, q.hi);
          }),
          table_of(sgn, [&](int32_t v) {
            return quantize_scalar_lane(f(dequantize_scalar_lane(v, q.in_scale, q.in_zp)), q.out_scale, q.out_zp, q.lo, q.hi);
          })};
}

// (float)(1.0 / s) in double: the vector-lane reciprocal of qhardswish, qhardsigmoid and qcat.
float double_reciprocal(float s) { return static_cast<float>(1.0 / static_cast<double>(s)); }

// QNNPACK builds one table, adding the output zero point in float before lrintf
// (qnnpack/src/hardswish.c, hardsigmoid.c, sigmoid.c).
ByteTable qnnpack_table(const TableQuant& q, const std::function<float(float)>& f) {
  const bool sgn = q.is_signed;
  const float inv = 1.0f / q.out_scale;
  return table_of(sgn, [&](int32_t v) {
    const float y = inv * f(dequantize_scalar_lane(v, q.in_scale, q.in_zp)) + static_cast<float>(q.out_zp);
    return static_cast<int32_t>(std::lrintf(std::clamp(y, static_cast<float>(q.lo), static_cast<float>(q.hi))));
  });
}

// fbgemm engine, qsigmoid_kernel. Its vector lanes use SLEEF's expf8_u10, which we do
// not reproduce: both tables use the C library's expf, so a vector-lane value may
// differ by one LSB where the two exps round a result across a half-way point.
UnaryTables sigmoid_fbgemm(const TableQuant& q) {
  const bool sgn = q.is_signed;
  const float inv = double_reciprocal(q.out_scale);
  return {table_of(sgn, [&](int32_t v) {
            const float x = dequantize_scalar_lane(v, q.in_scale, q.in_zp);
            return quantize_vector_lane(1.0f / (1.0f + std::exp(-x)), inv, q.out_zp, q.lo, q.hi);
          }),
          table_of(sgn, [&](int32_t v) {
            const float x = dequantize_scalar_lane(v, q.in_scale, q.in_zp);
            const float y = static_cast<float>(1.0 / (1.0 + static_cast<double>(std::exp(-x))));
            return quantize_scalar_lane(y, q.out_scale, q.out_zp, q.lo, q.hi);
          })};
}

// qclamp / qrelu6: the bounds are quantized with quantize_val, then the values clamped.
UnaryTables clamp_to(const TableQuant& q, float min, float max) {
  const bool sgn = q.is_signed;
  const int32_t lo = quantize_scalar_lane(min, q.in_scale, q.in_zp, q.lo, q.hi);
  const int32_t hi = quantize_scalar_lane(max, q.in_scale, q.in_zp, q.lo, q.hi);
  const ByteTable t = table_of(sgn, [&](int32_t v) { return std::clamp(v, lo, hi); });
  return {t, t};
}

// quantized::mul_scalar (qmul.cpp): b > 0 keeps the values (scale becomes b * s),
// b < 0 mirrors them (q' = qmax + qmin - q), b == 0 gives zeros.
UnaryTables mul_scalar_by(const TableQuant& q, double b) {
  const bool sgn = q.is_signed;
  const ByteTable t = table_of(sgn, [&](int32_t v) { return b > 0 ? v : (b < 0 ? q.hi + q.lo - v : 0); });
  return {t, t};
}

// quantized::add_scalar (qadd.cpp): c_q = nearbyint(c / s) in double; the values are
// requantized from (s, z) to the output qparams: rne(fl(float((q - z) + c_q) * fl(s * fl(1 / s')))) + z'.
UnaryTables add_scalar_of(const TableQuant& q, double c, double in_scale_double) {
  const bool sgn = q.is_signed;
  const int64_t c_q = static_cast<int64_t>(std::nearbyint(c / in_scale_double));
  const float mult = q.in_scale * (1.0f / q.out_scale);
  const bool same_scale = q.in_scale == q.out_scale;  // PyTorch shifts the zero point and copies the values
  const ByteTable t = table_of(sgn, [&](int32_t v) {
    if (same_scale) return v;
    const float acc = static_cast<float>((v - q.in_zp) + c_q);
    return clamp_i32(int64_t{cvtps_epi32(acc * mult)} + q.out_zp, q.lo, q.hi);
  });
  return {t, t};
}

}  // namespace

UnaryTables requantize_tables(bool is_signed, float in_scale, int32_t in_zp, float out_scale, int32_t out_zp,
                              int32_t lo, int32_t hi) {
  return pointwise_tables({in_scale, out_scale, in_zp, out_zp, lo, hi, is_signed}, double_reciprocal(out_scale),
                          [](float x) { return x; });
}

TableQuant table_quant(const Graph& g, const Node& n) {
  const Value &x = g.value(n.inputs.at(0)), &y = g.value(n.output);
  return {x.q.scale[0], y.q.scale[0], x.q.zero_point[0], y.q.zero_point[0], dtype_min(y.dtype), dtype_max(y.dtype),
          x.dtype == DType::Int8};
}

UnaryTables hardswish_tables(const TableQuant& q, const Node&, Profile profile) {
  // fbgemm engine: qhardswish_kernel.
  if (!follows_int32_bias_rules(profile)) return pointwise_tables(q, double_reciprocal(q.out_scale), hardswish);
  const ByteTable t = qnnpack_table(q, hardswish);
  return {t, t};
}

UnaryTables hardsigmoid_tables(const TableQuant& q, const Node&, Profile profile) {
  // fbgemm engine: qhardsigmoid_kernel (output scale 1/256: 256 exactly in both lanes).
  if (!follows_int32_bias_rules(profile)) return pointwise_tables(q, double_reciprocal(q.out_scale), hardsigmoid);
  const ByteTable t = qnnpack_table(q, hardsigmoid);
  return {t, t};
}

UnaryTables sigmoid_tables(const TableQuant& q, const Node&, Profile profile) {
  if (!follows_int32_bias_rules(profile)) return sigmoid_fbgemm(q);
  const ByteTable t = qnnpack_table(q, [](float x) { return 1.0f / (1.0f + std::exp(-x)); });
  return {t, t};
}

UnaryTables leaky_relu_tables(const TableQuant& q, const Node& n, Profile) {
  // leaky_qrelu_out_kernel (both engines): x > 0 ? x : x * slope; both lanes quantize with fl(1 / s_out).
  const float slope = static_cast<float>(n.float_attr("alpha"));
  return pointwise_tables(q, 1.0f / q.out_scale, [slope](float x) { return x > 0.0f ? x : x * slope; });
}

UnaryTables clamp_tables(const TableQuant& q, const Node& n, Profile) {
  return clamp_to(q, static_cast<float>(n.float_attr("min")), static_cast<float>(n.float_attr("max")));
}

UnaryTables mul_scalar_tables(const TableQuant& q, const Node& n, Profile) { return mul_scalar_by(q, n.float_attr("scalar")); }

UnaryTables add_scalar_tables(const TableQuant& q, const Node& n, Profile) {
  return add_scalar_of(q, n.float_attr("scalar"), q.in_scale);
}

// qelu_kernel (QuantizedOpKernels.cpp; both engines) with PyTorch's scale and input_scale
// coefficients at 1, as nnq.ELU passes them: the scalar tail computes x >= 0 ? x :
// (exp(x) - 1) * alpha; the vector lanes compute (exp(x) - 1) * alpha where x <= 0 and
// quantize with (float)(1.0 / s_out). As for sigmoid, PyTorch's vector lanes take exp from
// SLEEF and ours from the C library (see tests/test_more_ops.py for the measured agreement).
UnaryTables elu_tables(const TableQuant& q, const Node& n, Profile) {
  const float alpha = static_cast<float>(n.float_attr("alpha"));
  return {table_of(q.is_signed, [&](int32_t v) {
            const float x = dequantize_vector_lane(v, q.in_scale, q.in_zp);
            const float y = x > 0.0f ? x : (std::exp(x) - 1.0f) * alpha;
            return quantize_vector_lane(y, double_reciprocal(q.out_scale), q.out_zp, q.lo, q.hi);
          }),
          table_of(q.is_signed, [&](int32_t v) {
            const float x = dequantize_scalar_lane(v, q.in_scale, q.in_zp);
            const float y = x >= 0.0f ? x : (std::exp(x) - 1.0f) * alpha;
            return quantize_scalar_lane(y, q.out_scale, q.out_zp, q.lo, q.hi);
          })};
}

// Quantized tanh. fbgemm engine: qtanh_kernel (QuantizedOpKernels.cpp) dequantizes,
// takes tanh and quantizes with (float)(1.0 / s_out) in its vector lanes (SLEEF's tanh,
// ours the C library's, as for sigmoid) and with quantize_val in its scalar tail. qnnpack
// engine with uint8 (qnnpack_tanh in qtanh.cpp): QNNPACK's own table (qnnpack/src/tanh.c).
UnaryTables tanh_tables(const TableQuant& q, const Node&, Profile profile) {
  const auto tanh_of = [](float x) { return std::tanh(x); };
  if (follows_int32_bias_rules(profile) && !q.is_signed) {
    const ByteTable t = qnnpack_table(q, tanh_of);
    return {t, t};
  }
  return pointwise_tables(q, double_reciprocal(q.out_scale), tanh_of);
}

}  // namespace qnnpy
