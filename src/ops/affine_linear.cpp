// affine_linear: the linear of a torchao quantize_ model (torchao.quantization.quantize_), float in
// and float out. The weight is stored as torchao holds it: int8 values (N, K) (sub-byte ones, int1..int7,
// stored one per byte), a float32 scale and an int8 zero point per group of `group_size` consecutive
// input channels of a row (params "weight_scale", "weight_zero_point", each N * K / group_size long,
// row-major; weight-only layers may add a float "weight_offset" per group, ops/affine_weight.h); "bias" float32 (N)
// when the layer has one. Int attributes:
//   activation: 0  weight-only (Int8Tensor without act_quant_kwargs, IntxUnpackedToInt8Tensor)
//               1  int8 symmetric per-token dynamic quantization (Int8Tensor of
//                  Int8DynamicActivationInt8WeightConfig): integer GEMM, torchao's float epilogue
//               2  int8 asymmetric per-token quantization (IntxUnpackedToInt8Tensor of
//                  Int8DynamicActivationIntxWeightConfig, "8da4w"; torchao dequantizes it again before a float
//                  linear): integer dot products per group, scaled and summed in float
//   scale_after_dot: 1 when torchao multiplies the float dot products of the raw weight values by the row
//               scale (Int8Tensor weight-only per row), 0 when it dequantizes the weight first
//   weight_bits: the bits of the weight's values (4 for int4); they lie in [-2^(b-1), 2^(b-1) - 1]
// The arithmetic, formula by formula: runtime/affine_linear.h.
//
// Emission (canonical QDQ): the weight viewed as (N * K / g, g) and dequantized along axis 0 with the
// group scales and zero points, then reshaped to (N, K); the input per token (rows of K) quantized
// with the per-row qparams computed by Relax ops from the row's min / max, then dequantized; R.matmul
// and the bias in float32. torchao multiplies by the reciprocal of the scale where R.quantize divides:
// the emitted quantize takes the input already multiplied by 1 / scale, with a unit scale, so its
// integers are torchao's.
#include <string>

#include "emit/emitter.h"
#include "ops/affine_weight.h"
#include "ops/op_def.h"
#include "runtime/affine_linear.h"

namespace qnnpy {
namespace {

Shape affine_linear_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  if (x.dtype != DType::Float32) c.fail("input '" + x.name + "' must be float32");
  if (x.shape.empty()) c.fail("input must have rank >= 1");
  const Param& w = check_affine_weight(c);
  const int64_t n = w.shape[0], k = w.shape[1];
  if (x.shape.back() != k) c.fail("input " + shape_str(x.shape) + " does not match weight " + shape_str(w.shape));
  c.reduction_length(k);
  const int64_t group = c.n.int_attr("group_size");
  const int64_t groups = n * (k / group);
  const Param& zp = c.param("weight_zero_point");
  if (c.n.has_param("bias")) {
    const Param& b = c.param("bias");
    if (b.dtype != DType::Float32 || b.shape != Shape{n}) {
      c.fail("bias must be float32 " + shape_str({n}) + ", got " + dtype_name(b.dtype) + " " + shape_str(b.shape));
    }
  }
  const int64_t activation = c.n.int_attr("activation");
  if (activation < 0 || activation > 2) c.fail("activation must be 0 (weight-only), 1 or 2, got " + std::to_string(activation));
  const int64_t after = c.n.int_attr("scale_after_dot");
  if (after != 0 && after != 1) c.fail("scale_after_dot must be 0 or 1");
  if (activation != 0 && c.n.has_param("weight_offset")) {
    c.fail("a weight_offset (float group zeros, PyTorch's int4 tinygemm form) is for weight-only linears (activation 0)");
  }
  if (activation == 1) {
    if (group != k) c.fail("dynamic int8 activations need one weight scale per row (group_size = " + std::to_string(k) + ")");
    for (int64_t i = 0; i < groups; ++i) {
      if (zp.data<int8_t>()[i] != 0) c.fail("dynamic int8 activations need symmetric weights (zero points 0)");
    }
  }
  Shape out = x.shape;
  out.back() = n;
  return out;
}


// The per-token quantize -> dequantize of the input rows `x2` (rows, K), torchao's choose_qparams_affine
// and quantize_affine (torchao/quantization/quant_primitives.py) in Relax ops; returns the dequantized rows.
std::string emit_token_quantization(Emitter& e, const std::string& o, const std::string& x2, bool symmetric) {
  const std::string lo = e.emit(o + "_x_lo", "R.minimum(R.min(" + x2 + ", axis=[1], keepdims=True), " + float_const(0) + ")");
  const std::string hi = e.emit(o + "_x_hi", "R.maximum(R.max(" + x2 + ", axis=[1], keepdims=True), " + float_const(0) + ")");
  std::string scale, zero_point;
  if (symmetric) {
    // scale = max(-lo, hi) / 127.5 (half of qmax - qmin), at least float32's eps; zero point 0.
    const std::string amax = e.emit(o + "_x_amax", "R.maximum(R.negative(" + lo + "), " + hi + ")");
    scale = e.emit(o + "_x_scale", "R.maximum(R.divide(" + amax + ", " + float_const(127.5) + "), " + float_const(1.1920928955078125e-07) + ")");
  } else {
    // scale = (hi - lo) / 255, at least float32's smallest normal; zero point = clamp(-128 - round(lo / scale)).
    scale = e.emit(o + "_x_scale", "R.maximum(R.divide(R.subtract(" + hi + ", " + lo + "), " + float_const(255) + "), " +
                                       float_const(1.1754943508222875e-38) + ")");
    zero_point = e.emit(o + "_x_zero_point", "R.astype(R.clip(R.subtract(" + float_const(-128) + ", R.round(R.divide(" + lo + ", " +
                                                 scale + "))), -128, 127), \"int8\")");
  }
  const std::string scaled = e.emit(o + "_x_scaled", "R.multiply(" + x2 + ", R.divide(" + float_const(1) + ", " + scale + "))");
  // The integers: clamp(round(x * (1 / scale)) + zero point), with the unit-scale quantize described above.
  const std::string rounded =
      symmetric ? e.emit(o + "_x_rounded", "R.round(" + scaled + ")")
                : e.emit(o + "_x_rounded", "R.add(R.round(" + scaled + "), R.astype(" + zero_point + ", \"float32\"))");
  const std::string q = e.emit(o + "_xq", "R.quantize(" + rounded + ", " + float_const(1) + ", R.const(0, \"int32\"), out_dtype=\"int8\")");
  const std::string flat_scale = e.emit(o + "_x_scale_rows", "R.reshape(" + scale + ", R.shape([-1]))");
  if (symmetric) {
    return e.emit(o + "_x", "R.dequantize(" + q + ", " + flat_scale + ", R.const(0, \"int32\"), axis=0, out_dtype=\"float32\")");
  }
  const std::string flat_zp = e.emit(o + "_x_zero_point_rows", "R.reshape(" + zero_point + ", R.shape([-1]))");
  return e.emit(o + "_x", "R.dequantize(" + q + ", " + flat_scale + ", " + flat_zp + ", axis=0, out_dtype=\"float32\")");
}

void affine_linear_emit(Emitter& e, const Node& n) {
  const Graph& g = e.graph();
  const std::string& o = e.out_name(n);
  const Value& x = g.value(n.inputs[0]);
  const int64_t k = g.node_param(n, "weight").shape[1];
  const std::string wf = emit_affine_weight(e, n);
  const std::string x2 = e.emit(o + "_x_rows", "R.reshape(" + x.name + ", R.shape([-1, " + std::to_string(k) + "]))");
  const int64_t activation = n.int_attr("activation");
  const std::string xd = activation == 0 ? x2 : emit_token_quantization(e, o, x2, activation == 1);
  std::string y = e.emit(o + "_matmul", "R.matmul(" + xd + ", R.permute_dims(" + wf + ", axes=[1, 0]))");
  if (n.has_param("bias")) y = e.emit(o + "_biased", "R.add(" + y + ", " + g.node_param(n, "bias").name + ")");
  e.line(o, "R.reshape(" + y + ", " + e.value_shape_expr(n.output) + ")");
}

}  // namespace

std::vector<OpDef> affine_ops() {
  return {
      {"affine_linear", OpKind::Float, affine_linear_rule, affine_linear_emit, prepared_runner<AffineLinear>, nullptr,
       /*bit_exact_float_output=*/false, /*reads_quantized_source=*/false, /*any_dtype=*/false, /*quantizes_input=*/true,
       AffineLinear::packed_param_roles},
  };
}

}  // namespace qnnpy
