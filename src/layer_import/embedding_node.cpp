#include "layer_import/embedding_node.h"

#include <cstring>
#include <stdexcept>

namespace qnnpy {
namespace {

int add_param_copy(Graph& g, const std::string& name, DType dtype, const Shape& shape, const void* data) {
  Param p;
  p.name = name;
  p.dtype = dtype;
  p.shape = shape;
  p.bytes.resize(static_cast<size_t>(checked_num_elements(shape, "param '" + name + "'")) * dtype_size(dtype));
  std::memcpy(p.bytes.data(), data, p.bytes.size());
  return g.add_param(std::move(p));
}

}  // namespace

int add_embedding_node(Graph& g, const std::string& op, const std::vector<int>& inputs, const std::string& source,
                       const std::string& name, const EmbeddingTable& table,
                       std::map<std::string, std::vector<int64_t>> ints, const Shape& expected_shape) {
  const std::string where = op + " (" + source + "): ";
  if (op != "embedding" && op != "embedding_bag" && op != "float_embedding") throw std::invalid_argument(where + "not an embedding op");
  if (table.shape.size() != 2) throw std::invalid_argument(where + "the table must have rank 2, got " + shape_str(table.shape));
  const bool quantized = table.dtype == DType::UInt8;
  if (quantized != (op != "float_embedding") || (!quantized && table.dtype != DType::Float32)) {
    throw std::invalid_argument(where + "a " + dtype_name(table.dtype) + " table does not fit this op (" +
                                (op == "float_embedding" ? "float32" : "uint8 with per-row qparams") + " expected)");
  }
  if (quantized && (!table.row_scale || !table.row_zero_point)) throw std::invalid_argument(where + "the uint8 table needs per-row scales and zero points");
  Node n;
  n.op = op;
  n.source = source;
  n.inputs = inputs;
  n.ints = std::move(ints);
  n.params["weight"] = add_param_copy(g, name + "_weight", table.dtype, table.shape, table.data);
  if (quantized) {
    n.params["weight_scale"] = add_param_copy(g, name + "_weight_scale", DType::Float32, {table.shape[0]}, table.row_scale);
    n.params["weight_zero_point"] = add_param_copy(g, name + "_weight_zero_point", DType::Float32, {table.shape[0]}, table.row_zero_point);
  }
  Value out;
  out.name = name;
  out.dtype = DType::Float32;
  return g.add_node(std::move(n), std::move(out), expected_shape);
}

}  // namespace qnnpy
