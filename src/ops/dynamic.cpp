// Dynamic quantization: dynamic_linear (torch.ao.nn.quantized.dynamic.Linear), float in and
// float out; the input's qparams are chosen from each input at run time. Params: the int8
// "weight" (per tensor or per output channel) and the float32 "bias" (exported as it is:
// PyTorch adds it in float). Attributes: "relu", "reduce_range".
//
// Emission (the canonical dynamic QDQ form, docs/user_guide.md "Dynamic quantization"):
// the qparams rule of runtime/dynamic_qparams.h in Relax ops on R.min / R.max of the input,
// then R.quantize -> R.dequantize of the input with those run-time qparams, the dequantized
// int8 weight, R.matmul, the float bias and the relu, in float32.
#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/dynamic_linear.h"
#include "runtime/dynamic_qparams.h"

namespace qnnpy {
namespace {

Shape dynamic_linear_rule(const Checker& c, const Value&) {
  c.inputs(1);
  const Value& x = c.in(0);
  if (x.dtype != DType::Float32) c.fail("input '" + x.name + "' must be float32 (dynamic quantization quantizes it at run time)");
  if (x.shape.size() < 2) c.fail("input must have rank >= 2 (PyTorch's linear_dynamic), has shape " + shape_str(x.shape));
  const Param& w = c.param("weight");
  if (w.dtype != DType::Int8 || w.shape.size() != 2) c.fail("weight must be int8 (out, in), got " + shape_str(w.shape));
  const size_t channels = w.q.per_channel() ? static_cast<size_t>(w.shape[0]) : 1;
  if (w.q.per_channel() && w.q.axis != 0) c.fail("per-channel weight must be quantized along axis 0");
  if (w.q.scale.size() != channels || w.q.zero_point.size() != channels) {
    c.fail("weight needs " + std::to_string(channels) + " scale(s) and zero point(s)");
  }
  if (x.shape.back() != w.shape[1]) c.fail("input " + shape_str(x.shape) + " does not match weight " + shape_str(w.shape));
  if (c.n.has_param("bias")) {
    const Param& b = c.param("bias");
    if (b.dtype != DType::Float32 || b.shape != Shape{w.shape[0]}) {
      c.fail("bias must be float32 " + shape_str({w.shape[0]}) + ", got " + dtype_name(b.dtype) + " " + shape_str(b.shape));
    }
  }
  c.n.int_attr("relu");
  c.n.int_attr("reduce_range");
  Shape out = x.shape;
  out.back() = w.shape[0];
  return out;
}

std::string f64(double v) { return "R.const(" + float_literal(v) + ", \"float64\")"; }

// choose_dynamic_qparams in Relax: returns the (scale, zero point) variables, float32 and int32 rank 0.
std::pair<std::string, std::string> emit_dynamic_qparams(Emitter& e, const std::string& o, const std::string& x,
                                                         bool reduce_range) {
  const double qmax = dynamic_qmax(reduce_range);  // qmin is 0
  const double small = 6.1e-5f;                    // SMALL_SCALE_THRESHOLD
  const std::string lo = e.emit(o + "_x_lo", "R.minimum(R.min(" + x + "), " + float_const(0) + ")");
  const std::string hi = e.emit(o + "_x_hi", "R.maximum(R.max(" + x + "), " + float_const(0) + ")");
  std::string scale = e.emit(o + "_x_range", "R.divide(R.subtract(R.astype(" + hi + ", \"float64\"), R.astype(" + lo +
                                                 ", \"float64\")), " + f64(qmax) + ")");
  const std::string s32 = e.emit(o + "_x_range32", "R.astype(" + scale + ", \"float32\")");
  scale = e.emit(o + "_x_nonzero",
                 "R.where(R.logical_or(R.equal(" + s32 + ", " + float_const(0) + "), R.isinf(R.divide(" + float_const(1) + ", " + s32 +
                     "))), " + f64(0.1) + ", " + scale + ")");
  // Scales below the threshold become it; lo and hi widen in float to match.
  const std::string small_scale = e.emit(o + "_x_small", "R.less(" + scale + ", " + f64(small) + ")");
  const std::string amp = e.emit(o + "_x_amplifier", "R.divide(" + float_const(small) + ", R.astype(" + scale + ", \"float32\"))");
  const std::string lo_small = e.emit(
      o + "_x_lo_small", "R.where(R.equal(" + lo + ", " + float_const(0) + "), " + lo + ", R.where(R.equal(" + hi + ", " + float_const(0) +
                             "), " + float_const(static_cast<float>(-small * qmax)) + ", R.multiply(" + lo + ", " + amp + ")))");
  const std::string hi_small = e.emit(
      o + "_x_hi_small", "R.where(R.equal(" + lo + ", " + float_const(0) + "), " + float_const(static_cast<float>(small * qmax)) +
                             ", R.where(R.equal(" + hi + ", " + float_const(0) + "), " + hi + ", R.multiply(" + hi + ", " + amp + ")))");
  const std::string lo64 = e.emit(o + "_x_lo64", "R.astype(R.where(" + small_scale + ", " + lo_small + ", " + lo + "), \"float64\")");
  const std::string hi64 = e.emit(o + "_x_hi64", "R.astype(R.where(" + small_scale + ", " + hi_small + ", " + hi + "), \"float64\")");
  scale = e.emit(o + "_x_scale64", "R.where(" + small_scale + ", " + f64(small) + ", " + scale + ")");
  // The zero point from (lo, qmin) or (hi, qmax), whichever adds the smaller terms; round half to even, clamp.
  const std::string lo_ratio = e.emit(o + "_x_lo_ratio", "R.divide(" + lo64 + ", " + scale + ")");
  const std::string hi_ratio = e.emit(o + "_x_hi_ratio", "R.divide(" + hi64 + ", " + scale + ")");
  const std::string initial = e.emit(
      o + "_x_zp_initial", "R.where(R.less(R.negative(R.abs(" + lo_ratio + ")), R.subtract(" + f64(qmax) + ", R.abs(" +
                               hi_ratio + "))), R.negative(" + lo_ratio + "), R.subtract(" + f64(qmax) + ", " + hi_ratio + "))");
  const std::string zp = e.emit(o + "_x_zero_point", "R.astype(R.clip(R.round(" + initial + "), 0, " +
                                                          std::to_string(static_cast<int>(qmax)) + "), \"int32\")");
  const std::string s = e.emit(o + "_x_scale", "R.astype(" + scale + ", \"float32\")");
  return {s, zp};
}

void dynamic_linear_emit(Emitter& e, const Node& n) {
  const std::string& o = e.out_name(n);
  const std::string x = e.graph().value(n.inputs[0]).name;
  const auto [s, zp] = emit_dynamic_qparams(e, o, x, n.int_attr("reduce_range") != 0);
  const std::string xq = e.emit(o + "_xq", "R.quantize(" + x + ", " + s + ", " + zp + ", axis=-1, out_dtype=\"uint8\")");
  const std::string xd = e.emit(o + "_x", "R.dequantize(" + xq + ", " + s + ", " + zp + ", axis=-1, out_dtype=\"float32\")");
  const std::string w = e.param(e.graph().node_param(n, "weight"), o + "_w");
  const std::string wt = e.emit(o + "_wt", "R.permute_dims(" + w + ", axes=[1, 0])");
  std::string y = e.emit(o + "_matmul", "R.matmul(" + xd + ", " + wt + ")");
  if (n.has_param("bias")) y = e.emit(o + "_biased", "R.add(" + y + ", " + e.graph().node_param(n, "bias").name + ")");
  e.line(o, n.int_attr("relu") ? "R.nn.relu(" + y + ")" : y);
}

}  // namespace

std::vector<OpDef> dynamic_ops() {
  return {
      {"dynamic_linear", OpKind::Float, dynamic_linear_rule, dynamic_linear_emit, prepared_runner<DynamicLinear>, nullptr,
       /*bit_exact_float_output=*/true, /*reads_quantized_source=*/false, /*any_dtype=*/false, /*quantizes_input=*/true},
  };
}

}  // namespace qnnpy
