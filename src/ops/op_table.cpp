#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

#include "ir/limits.h"
#include "ops/op_def.h"

namespace qnnpy {
namespace {

// Activations are stored one byte per element (uint8 or int8).
void check_output_qparams(const Checker& c, const Value& out) {
  if (out.dtype != DType::UInt8 && out.dtype != DType::Int8) {
    c.fail(std::string("output must be uint8 or int8 (activations take one byte per element), got ") + dtype_name(out.dtype));
  }
  if (out.q.scale.size() != 1 || out.q.zero_point.size() != 1 || out.q.per_channel()) {
    c.fail("output needs per-tensor scale and zero point");
  }
  if (!(out.q.scale[0] > 0.0f) || !std::isfinite(out.q.scale[0])) {
    c.fail("output scale must be finite and positive, got " + std::to_string(out.q.scale[0]));
  }
  int32_t zp = out.q.zero_point[0];
  if (zp < dtype_min(out.dtype) || zp > dtype_max(out.dtype)) {
    c.fail("output zero point " + std::to_string(zp) + " outside the range of " + dtype_name(out.dtype));
  }
}

std::vector<OpDef> assemble() {
  std::vector<OpDef> all;
  for (auto family : {quantize_ops, conv_ops, elementwise_ops, pool_ops, pool3d_ops, shape_ops, norm_ops, dynamic_ops, affine_ops,
                      softmax_ops, float_ops, float_transformer_ops, float_attention_ops, float_unary_ops, float_binary_ops,
                      float_movement_ops, float_reduce_ops, float_scatter_ops, embedding_ops}) {
    for (const OpDef& op : family()) all.push_back(op);
  }
  return all;
}

}  // namespace

const std::vector<OpDef>& op_table() {
  static const std::vector<OpDef> table = assemble();
  return table;
}

const OpDef& op_def(const Node& n) {
  static const std::map<std::string, const OpDef*> by_name = [] {
    std::map<std::string, const OpDef*> m;
    for (const OpDef& op : op_table()) {
      if (!m.emplace(op.name, &op).second) throw std::logic_error(std::string("op '") + op.name + "' is defined twice");
    }
    return m;
  }();
  auto it = by_name.find(n.op);
  if (it == by_name.end()) throw std::invalid_argument(n.op + " (" + n.source + "): unknown op");
  return *it->second;
}

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::Requantizing: return "requantizing";
    case OpKind::QParamPreserving: return "qparam_preserving";
    case OpKind::Quantize: return "quantize";
    case OpKind::Dequantize: return "dequantize";
    case OpKind::Float: return "float";
    case OpKind::Lookup: return "lookup";
  }
  return "?";
}

namespace {

// The checks every node passes whatever its op: bounded int attributes and finite
// float attributes (each op's rule then checks their meaning).
void check_attribute_ranges(const Checker& c) {
  for (const auto& [key, values] : c.n.ints) {
    for (int64_t v : values) {
      if (v < -kMaxExtent || v > kMaxExtent) {
        c.fail("attribute '" + key + "' = " + std::to_string(v) + " is outside [-" + std::to_string(kMaxExtent) + ", " +
               std::to_string(kMaxExtent) + "]");
      }
    }
  }
  for (const auto& [key, v] : c.n.floats) {
    if (!std::isfinite(v)) c.fail("attribute '" + key + "' = " + std::to_string(v) + " is not finite");
  }
}

Shape check_by_kind(const OpDef& op, const Checker& c, const Value& out) {
  switch (op.kind) {
    case OpKind::Requantizing:
    case OpKind::Quantize:
      check_output_qparams(c, out);
      return op.infer(c, out);
    case OpKind::Dequantize:
      if (out.dtype != DType::Float32 || !out.q.empty()) c.fail("output must be float32 without qparams");
      return op.infer(c, out);
    case OpKind::Float:
      if (op.any_dtype) {
        if (!is_plain_dtype(out.dtype) || !out.q.empty()) c.fail("output must be float32, int64, int32 or bool without qparams");
        for (size_t i = 0; i < c.n.inputs.size(); ++i) {
          if (!is_plain_dtype(c.in(i).dtype)) c.fail("input '" + c.in(i).name + "' must be unquantized (dequantize it first)");
        }
        return op.infer(c, out);
      }
      if (out.dtype != DType::Float32 || !out.q.empty()) c.fail("output must be float32 without qparams");
      for (size_t i = 0; i < c.n.inputs.size(); ++i) {
        if (op.reads_quantized_source && i == 1) continue;  // the op's rule checks its 8-bit source
        if (c.in(i).dtype != DType::Float32) c.fail("input '" + c.in(i).name + "' must be float32 (dequantize it first)");
      }
      return op.infer(c, out);
    case OpKind::Lookup:
      if (out.dtype != DType::Float32 || !out.q.empty()) c.fail("output must be float32 without qparams");
      return op.infer(c, out);
    case OpKind::QParamPreserving: {
      Shape shape = op.infer(c, out);
      const Value& x = c.in(0);
      if (out.dtype != x.dtype || out.q.scale != x.q.scale || out.q.zero_point != x.q.zero_point) {
        c.fail("output must keep the input's dtype and quantization parameters");
      }
      return shape;
    }
  }
  c.fail("op has no kind");
}

}  // namespace

Shape check_node(const Graph& g, const Node& n, const Value& out) {
  const OpDef& op = op_def(n);
  const Checker c{g, n};
  check_attribute_ranges(c);
  if (op.kind != OpKind::Lookup && !op.any_dtype) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (is_integer_storage(c.in(i).dtype)) {
        c.fail("input '" + c.in(i).name + "' holds " + dtype_name(c.in(i).dtype) + " values, which only embedding ops and "
               "float ops of any dtype take");
      }
    }
  }
  Shape shape = check_by_kind(op, c, out);
  checked_num_elements(shape, n.op + " (" + n.source + "): output");
  return shape;
}

}  // namespace qnnpy
