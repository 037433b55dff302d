// Embedding lookups: integer indices (an int64 / int32 graph input) select rows of a table.
//
// - embedding: torch.ao.nn.quantized.Embedding (quantized::embedding_byte). The table is
//   uint8 (param "weight", rows x dim) quantized per row with a float scale and a float zero
//   point (params "weight_scale", "weight_zero_point", float32, one per row: PyTorch's
//   per_channel_affine_float_qparams, whose zero points are not integers). Output float32.
// - embedding_bag: torch.ao.nn.quantized.EmbeddingBag (quantized::embedding_bag_byte): the sum
//   of the rows of each bag, optionally weighted per index. Indices are 1-D with an offsets input
//   (bag b holds indices[offsets[b] : offsets[b + 1]]; int attribute include_last_offset as in
//   PyTorch), or 2-D (one bag per row, no offsets). An optional last input holds the float32
//   per-sample weights, shaped like the indices.
// - float_embedding: a float32 table (aten.embedding of a model left in float).
// - affine_embedding: the nn.Embedding of a torchao quantize_ model (IntxWeightOnlyConfig, as ExecuTorch's
//   8da4w recipe quantizes embeddings): an int8 table with a float32 scale and an int8 zero point per group
//   of columns of a row (ops/affine_weight.h); a row's values are fl(float(q - zero_point) * scale), as
//   torchao's dequantize_affine computes them, so the lookup equals torchao's bit for bit.
//
// Emission: the 8-bit table dequantized per row (axis 0), as q * scale + bias with PyTorch's
// bias = -(zero_point * scale) (a float zero point has no R.dequantize form), computed in float64
// and cast to float32 (PyTorch's single fma rounding, see float_table), then R.take of the
// rows; a bag sums its rows (R.sum over fixed-length bags, a 0/1 bag-membership matrix times the
// rows with offsets). The runtime's arithmetic: src/runtime/ops/embedding_ops.cpp.
#include <string>

#include "emit/emitter.h"
#include "ops/affine_weight.h"
#include "ops/op_def.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

void index_input(const Checker& c, const Value& v, const std::string& what) {
  if (!is_index_dtype(v.dtype)) {
    c.fail(what + " '" + v.name + "' must be int64 or int32 indices, got " + dtype_name(v.dtype));
  }
}

// The table param "weight" (rows, dim) of `dtype`; for the 8-bit table, its per-row scale and zero point.
const Param& table(const Checker& c, DType dtype) {
  const Param& w = c.param("weight");
  if (w.dtype != dtype || w.shape.size() != 2 || !w.q.empty()) {
    c.fail(std::string("weight must be a ") + dtype_name(dtype) + " table (rows, dim) without qparams, got " +
           dtype_name(w.dtype) + " " + shape_str(w.shape));
  }
  if (dtype == DType::UInt8) {
    for (const char* role : {"weight_scale", "weight_zero_point"}) {
      const Param& p = c.param(role);
      if (p.dtype != DType::Float32 || p.shape != Shape{w.shape[0]}) {
        c.fail(std::string(role) + " must be float32 with one value per row " + shape_str({w.shape[0]}) + ", got " +
               dtype_name(p.dtype) + " " + shape_str(p.shape));
      }
    }
    const float* scale = c.param("weight_scale").data<float>();
    for (int64_t r = 0; r < w.shape[0]; ++r) {
      if (!(scale[r] > 0.0f)) c.fail("weight_scale of row " + std::to_string(r) + " is " + std::to_string(scale[r]) + ", not positive");
    }
  }
  return w;
}

// Rows of `w` for each index: the index shape followed by the row length.
Shape lookup_shape(const Checker& c, const Param& w) {
  const Value& idx = c.in(0);
  index_input(c, idx, "input");
  if (idx.shape.empty()) c.fail("indices must have rank >= 1");
  Shape out = idx.shape;
  out.push_back(w.shape[1]);
  return out;
}

Shape embedding_rule(const Checker& c, const Value&) {
  c.inputs(1);
  return lookup_shape(c, table(c, DType::UInt8));
}

Shape float_embedding_rule(const Checker& c, const Value&) {
  c.inputs(1);
  return lookup_shape(c, table(c, DType::Float32));
}

Shape affine_embedding_rule(const Checker& c, const Value&) {
  c.inputs(1);
  return lookup_shape(c, check_affine_weight(c));
}

Shape embedding_bag_rule(const Checker& c, const Value&) {
  const Param& w = table(c, DType::UInt8);
  if (c.n.inputs.empty()) c.fail("expects the indices as its first input");
  const Value& idx = c.in(0);
  index_input(c, idx, "input");
  const int64_t include_last = c.n.int_attr("include_last_offset");
  if (include_last != 0 && include_last != 1) c.fail("include_last_offset must be 0 or 1");
  if (idx.shape.size() != 1 && idx.shape.size() != 2) c.fail("indices must be 1-D (with offsets) or 2-D (fixed-length bags)");
  const size_t fixed_inputs = idx.shape.size() == 1 ? 2 : 1;
  if (c.n.inputs.size() != fixed_inputs && c.n.inputs.size() != fixed_inputs + 1) {
    c.fail(idx.shape.size() == 1 ? "expects indices, offsets and optional per-sample weights"
                                 : "expects 2-D indices and optional per-sample weights (no offsets)");
  }
  if (c.n.inputs.size() == fixed_inputs + 1) {
    const Value& weights = c.in(fixed_inputs);
    if (weights.dtype != DType::Float32 || weights.shape != idx.shape) {
      c.fail("per-sample weights '" + weights.name + "' must be float32 shaped like the indices " + shape_str(idx.shape));
    }
  }
  int64_t bags = idx.shape[0];
  if (idx.shape.size() == 1) {
    const Value& offsets = c.in(1);
    index_input(c, offsets, "offsets");
    if (offsets.shape.size() != 1) c.fail("offsets '" + offsets.name + "' must be 1-D, got " + shape_str(offsets.shape));
    bags = offsets.shape[0] - include_last;
    if (bags < 1) c.fail("offsets '" + offsets.name + "' " + shape_str(offsets.shape) + " define no bag");
  } else if (include_last) {
    c.fail("include_last_offset needs 1-D indices with offsets");
  }
  return {bags, w.shape[1]};
}

// --- emission ------------------------------------------------------------------

// The float32 table: the param itself, or the 8-bit one dequantized row by row.
std::string float_table(Emitter& e, const Node& n) {
  const Graph& g = e.graph();
  const Param& w = g.node_param(n, "weight");
  if (w.dtype == DType::Float32) return w.name;
  const std::string scale = g.node_param(n, "weight_scale").name;
  const std::string zero_point = g.node_param(n, "weight_zero_point").name;
  const std::string column = "R.shape([" + std::to_string(w.shape[0]) + ", 1])";
  const std::string base = e.out_name(n);
  // PyTorch's row value is fma(scale, q, bias): one rounding. In float64 the product of a float32 and
  // a byte is exact, so the float64 sum rounded to float32 is that fma but for a double rounding
  // (the float64 sum landing on a float32 tie), where float32 multiply-then-add rounds twice.
  const std::string s = e.emit(base + "_row_scale", "R.astype(R.reshape(" + scale + ", " + column + "), \"float64\")");
  const std::string bias = e.emit(base + "_row_bias", "R.reshape(R.negative(R.multiply(" + zero_point + ", " + scale + ")), " + column + ")");
  return e.emit(base + "_table", "R.astype(R.add(R.multiply(R.astype(" + w.name + ", \"float64\"), " + s + "), R.astype(" + bias +
                                     ", \"float64\")), \"float32\")");
}

void lookup_emit(Emitter& e, const Node& n) {
  const std::string t = n.op == "affine_embedding" ? emit_affine_weight(e, n) : float_table(e, n);
  e.line(e.out_name(n), "R.take(" + t + ", " + e.in_name(n, 0) + ", axis=0)");
}

void embedding_bag_emit(Emitter& e, const Node& n) {
  const Graph& g = e.graph();
  const Value& idx = g.value(n.inputs[0]);
  const std::string base = e.out_name(n);
  std::string rows = e.emit(base + "_rows", "R.take(" + float_table(e, n) + ", " + idx.name + ", axis=0)");
  const size_t fixed_inputs = idx.shape.size() == 1 ? 2 : 1;
  if (n.inputs.size() > fixed_inputs) {
    rows = e.emit(base + "_weighted", "R.multiply(" + rows + ", R.expand_dims(" + e.in_name(n, fixed_inputs) + ", axis=-1))");
  }
  if (idx.shape.size() == 2) {
    e.line(base, "R.sum(" + rows + ", axis=[1])");
    return;
  }
  // member[b, i] = 1 when offsets[b] <= i < end of bag b (the next offset, or the index count).
  const Value& offsets = g.value(n.inputs[1]);
  const int64_t count = idx.shape[0], bags = g.value(n.output).shape[0];
  std::string bounds = e.emit(base + "_offsets", "R.astype(" + offsets.name + ", \"int64\")");
  if (!n.int_attr("include_last_offset")) {
    bounds = e.emit(base + "_bounds", "R.concat((" + bounds + ", R.const([" + std::to_string(count) + "], \"int64\")), axis=0)");
  }
  const std::string starts = e.emit(base + "_starts", "R.reshape(R.strided_slice(" + bounds + ", axes=[0], begin=[0], end=[" +
                                                          std::to_string(bags) + "]), R.shape([" + std::to_string(bags) + ", 1]))");
  const std::string ends = e.emit(base + "_ends", "R.reshape(R.strided_slice(" + bounds + ", axes=[0], begin=[1], end=[" +
                                                      std::to_string(bags + 1) + "]), R.shape([" + std::to_string(bags) + ", 1]))");
  const std::string positions = e.emit(base + "_positions", "R.reshape(R.arange(0, " + std::to_string(count) +
                                                                 ", 1, dtype=\"int64\"), R.shape([1, " + std::to_string(count) + "]))");
  const std::string member = e.emit(base + "_member", "R.astype(R.logical_and(R.greater_equal(" + positions + ", " + starts +
                                                          "), R.less(" + positions + ", " + ends + ")), \"float32\")");
  e.line(base, "R.matmul(" + member + ", " + rows + ")");
}

}  // namespace

std::vector<OpDef> embedding_ops() {
  return {
      {"embedding", OpKind::Lookup, embedding_rule, lookup_emit, function_runner<run_embedding>},
      {"embedding_bag", OpKind::Lookup, embedding_bag_rule, embedding_bag_emit, function_runner<run_embedding_bag>},
      {"float_embedding", OpKind::Lookup, float_embedding_rule, lookup_emit, function_runner<run_float_embedding>},
      {"affine_embedding", OpKind::Lookup, affine_embedding_rule, lookup_emit, function_runner<run_affine_embedding>},
  };
}

}  // namespace qnnpy
