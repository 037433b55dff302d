// Ops that move values: reshape, permute, slice, cat and nearest upsampling.
// All but cat keep the input's qparams; cat requantizes each input to its output's.
#include "emit/emitter.h"
#include "ir/bilinear.h"
#include "ir/limits.h"
#include "ir/nearest.h"
#include "ops/op_def.h"
#include "runtime/ops/float_spatial_runners.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

Shape reshape_rule(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  const auto& shape = c.n.ints_attr("shape");
  if (checked_num_elements(shape, c.n.op + " (" + c.n.source + "): attribute 'shape'") != num_elements(c.in(0).shape)) {
    c.fail("cannot reshape " + shape_str(c.in(0).shape) + " to " + shape_str(shape));
  }
  return shape;
}

void reshape_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return "R.reshape(" + x + ", " + e.attr_shape_expr(n, "shape") + ")"; });
}

Shape permute_rule(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  const Shape& x = c.in(0).shape;
  const auto& perm = c.n.ints_attr("perm");
  if (perm.size() != x.size()) c.fail("perm " + shape_str(perm) + " does not match rank " + std::to_string(x.size()));
  Shape out(x.size());
  std::vector<bool> seen(x.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(x.size()) || seen[perm[i]]) c.fail("perm " + shape_str(perm) + " is not a permutation");
    seen[perm[i]] = true;
    out[i] = x[perm[i]];
  }
  return out;
}

void permute_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return "R.permute_dims(" + x + ", axes=" + int_list(n.ints_attr("perm")) + ")"; });
}

Shape slice_rule(const Checker& c, const Value&) {
  c.inputs(1);
  c.quantized(c.in(0));
  Shape out = c.in(0).shape;
  const int64_t axis = c.axis("axis", out.size());
  const int64_t begin = c.n.int_attr("begin"), end = c.n.int_attr("end");
  if (begin < 0 || end > out[axis] || begin >= end) {
    c.fail("range [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside axis of size " + std::to_string(out[axis]));
  }
  out[axis] = end - begin;
  return out;
}

void slice_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) {
    return "R.strided_slice(" + x + ", axes=[" + std::to_string(n.int_attr("axis")) + "], begin=[" +
           std::to_string(n.int_attr("begin")) + "], end=[" + std::to_string(n.int_attr("end")) + "])";
  });
}

Shape cat_rule(const Checker& c, const Value& out) {
  if (c.n.inputs.empty()) c.fail("expects at least one input");
  for (size_t i = 0; i < c.n.inputs.size(); ++i) {
    const Value& x = c.in(i);
    c.quantized(x);
    if (x.dtype != out.dtype) c.fail("input '" + x.name + "' has dtype " + dtype_name(x.dtype) + ", output " + dtype_name(out.dtype));
  }
  return concat_shape(c);
}

void cat_emit(Emitter& e, const Node& n) {
  std::string parts = "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) parts += e.input(n, i, "in" + std::to_string(i)) + ", ";
  e.quantize_output(n, e.emit(e.out_name(n) + "_cat", "R.concat(" + parts + "), axis=" + std::to_string(n.int_attr("axis")) + ")"));
}

// The output size is an attribute; PyTorch's scale factors (0: none) pick the source pixels.
// The output shape of upsample_nearest2d, float_upsample_nearest2d and float_upsample_bilinear2d.
Shape upsample2d_shape(const Checker& c) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.rank(x, 4);
  auto size = c.pair("output_size");
  c.positive(size, "output_size");
  // 0: no scale factor. Otherwise the source index floor(dst / scale) must stay a
  // small finite number (scale >= 1 / kMaxExtent) before nearest_source_index casts it.
  for (const char* key : {"scale_h", "scale_w"}) {
    const double scale = c.n.float_attr(key);
    if (scale != 0.0 && !(scale * static_cast<double>(kMaxExtent) >= 1.0)) {
      c.fail(std::string("attribute '") + key + "' must be 0 (none) or at least 1/" + std::to_string(kMaxExtent) +
             ", got " + std::to_string(scale));
    }
  }
  return {x.shape[0], x.shape[1], size[0], size[1]};
}

Shape upsample_nearest2d_rule(const Checker& c, const Value&) {
  c.quantized(c.in(0));
  return upsample2d_shape(c);
}

// PyTorch's nearest upsampling. Without a scale factor its source index is
// floor(dst * in / out), which resize2d's asymmetric / floor mode computes; with one
// (1 / scale_factor instead of in / out) the rows and columns are gathered explicitly.
std::string upsample_nearest2d_expr(const Emitter& e, const Node& n, const std::string& x) {
  const Shape& in = e.graph().value(n.inputs[0]).shape;
  const auto& size = n.ints_attr("output_size");
  const double scale[2] = {n.float_attr("scale_h"), n.float_attr("scale_w")};
  if (scale[0] <= 0 && scale[1] <= 0) {
    return "R.image.resize2d(" + x + ", R.shape(" + int_list(size) +
           "), method=\"nearest_neighbor\", coordinate_transformation_mode=\"asymmetric\", rounding_method=\"floor\")";
  }
  std::string expr = x;
  for (int axis = 0; axis < 2; ++axis) {
    std::vector<int64_t> index(static_cast<size_t>(size[axis]));
    for (int64_t d = 0; d < size[axis]; ++d) index[d] = nearest_source_index(d, in[2 + axis], size[axis], scale[axis]);
    expr = "R.take(" + expr + ", R.const(" + int_list(index) + ", \"int64\"), axis=" + std::to_string(2 + axis) + ")";
  }
  return expr;
}

void upsample_nearest2d_emit(Emitter& e, const Node& n) {
  e.unary(n, [&](const std::string& x) { return upsample_nearest2d_expr(e, n, x); });
}

// float_upsample_nearest2d: the same on float32 tensors. float_upsample_bilinear2d: "output_size",
// "align_corners" (0 / 1), "scale_h" / "scale_w" (0: none), PyTorch's bilinear interpolation
// (runtime/ops/float_spatial.cpp), emitted as resize2d with the matching coordinate mode.
Shape float_upsample2d_rule(const Checker& c, const Value& out) {
  c.dtype(c.in(0), DType::Float32);
  c.dtype(out, DType::Float32);
  if (c.n.op == "float_upsample_bilinear2d") {
    const int64_t align = c.n.int_attr("align_corners");
    if (align != 0 && align != 1) c.fail("align_corners must be 0 or 1, got " + std::to_string(align));
  }
  return upsample2d_shape(c);
}

void float_upsample_nearest2d_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), upsample_nearest2d_expr(e, n, e.in_name(n, 0)));
}

// Bilinear upsampling as its taps: along each axis, the rows (columns) i0 and i1 of every output position taken
// and blended (1 - w) * x[i0] + w * x[i1], with PyTorch's source positions (ir/bilinear.h; resize2d's differ
// where PyTorch's caller gave a scale factor).
void float_upsample_bilinear2d_emit(Emitter& e, const Node& n) {
  const Shape& in = e.graph().value(n.inputs[0]).shape;
  const auto& size = n.ints_attr("output_size");
  const bool align = n.int_attr("align_corners") != 0;
  const double scale[2] = {n.float_attr("scale_h"), n.float_attr("scale_w")};
  std::string y = e.in_name(n, 0);
  for (int axis = 0; axis < 2; ++axis) {
    std::vector<int64_t> i0, i1;
    std::string w = "[";
    for (const BilinearTap& t : bilinear_taps(in[2 + axis], size[axis], align, scale[axis])) {
      i0.push_back(t.i0), i1.push_back(t.i1);
      w += float_literal(t.w1) + ", ";
    }
    const std::vector<int64_t> w_shape = axis == 0 ? std::vector<int64_t>{1, 1, size[0], 1} : std::vector<int64_t>{1, 1, 1, size[1]};
    const std::string weight = e.emit(e.out_name(n) + "_w" + std::to_string(axis),
                                      "R.reshape(R.const(" + w + "], \"float32\"), R.shape(" + int_list(w_shape) + "))");
    const std::string take = ", axis=" + std::to_string(2 + axis) + ")";
    const std::string a = "R.take(" + y + ", R.const(" + int_list(i0) + ", \"int64\")" + take;
    const std::string b = "R.take(" + y + ", R.const(" + int_list(i1) + ", \"int64\")" + take;
    y = e.emit(e.out_name(n) + "_axis" + std::to_string(axis),
               call("R.add", call("R.multiply", a, call("R.subtract", float_const(1.0f), weight)), call("R.multiply", b, weight)));
  }
  e.line(e.out_name(n), y);
}

}  // namespace

std::vector<OpDef> shape_ops() {
  return {
      {"reshape", OpKind::QParamPreserving, reshape_rule, reshape_emit, function_runner<run_reshape>},
      {"permute", OpKind::QParamPreserving, permute_rule, permute_emit, function_runner<run_permute>},
      {"slice", OpKind::QParamPreserving, slice_rule, slice_emit, function_runner<run_slice>},
      {"cat", OpKind::Requantizing, cat_rule, cat_emit, function_runner<run_cat>},
      {"upsample_nearest2d", OpKind::QParamPreserving, upsample_nearest2d_rule, upsample_nearest2d_emit,
       function_runner<run_upsample_nearest2d>},
      {"float_upsample_nearest2d", OpKind::Float, float_upsample2d_rule, float_upsample_nearest2d_emit,
       function_runner<run_float_upsample_nearest2d>},
      {"float_upsample_bilinear2d", OpKind::Float, float_upsample2d_rule, float_upsample_bilinear2d_emit,
       function_runner<run_float_upsample_bilinear2d>},
  };
}

}  // namespace qnnpy
