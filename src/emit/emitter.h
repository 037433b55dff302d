// The TVMScript writer the ops' emission functions use (src/ops/*.cpp): fresh
// variable names, dequantize / quantize in the canonical QDQ form, literals.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <sstream>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace qnnpy {

// 17 significant digits print the exact double of a float32, so the parsed
// constant converts back to the same float32.
std::string float_const(float v);
std::string float_literal(double v);
std::string int_const(int64_t v);
// A Relax scalar constant: float32 (infinities included) or bool.
std::string scalar_const(double v, DType dtype);
// `f(args...)`, a Relax call.
std::string call(const std::string& f, const std::string& x);
std::string call(const std::string& f, const std::string& x, const std::string& y);
std::string int_list(const std::vector<int64_t>& v);
// Symmetric padding (h, w) in Relax's (top, left, bottom, right) order.
std::string padding4(const std::vector<int64_t>& p);

class Emitter {
 public:
  explicit Emitter(const Graph& g);

  // The whole module, one function named `func_name`.
  std::string run(const std::string& func_name);

  const Graph& graph() const { return g_; }
  // The name of node n's output variable.
  const std::string& out_name(const Node& n) const { return g_.value(n.output).name; }
  // The variable of node n's input i, as it is (float ops take their inputs undequantized).
  const std::string& in_name(const Node& n, size_t i) const { return g_.value(n.inputs.at(i)).name; }

  // A Relax shape literal; with a dynamic batch, dim 0 is the function's symbolic batch variable.
  std::string shape_expr(const Shape& shape) const;
  // With a symbolic dim (ir/symbolic.h), the extents that follow it are written as expressions of its variable:
  // the shape of a value, an integer attribute of a node as a shape or as a list, one entry of it.
  std::string value_shape_expr(int value_id) const;
  std::string attr_shape_expr(const Node& n, const std::string& key) const;
  std::string attr_list(const Node& n, const std::string& key) const;
  std::string attr_entry(const Node& n, const std::string& key, size_t entry) const;
  // How axis `axis` of a value follows the symbolic dim (its slope; 0 for a fixed extent or no symbolic dim).
  int64_t dim_slope(int value_id, size_t axis) const;
  // The extent of one axis of a value: a number, or an expression of the symbolic dim's variable.
  std::string value_dim_expr(int value_id, size_t axis) const;

  // Writes `expr` into a fresh variable named from `base`; returns the variable.
  std::string emit(const std::string& base, const std::string& expr);
  // Writes `var = expr` for a variable that already has its name.
  void line(const std::string& var, const std::string& expr);
  // The dequantized input i of n, in a fresh variable `<out>_<suffix>`.
  std::string input(const Node& n, size_t i, const std::string& suffix);
  // The dequantized param, per tensor or per channel along axis 0.
  std::string param(const Param& p, const std::string& base);
  // Quantizes `src` into n's output variable.
  void quantize_output(const Node& n, const std::string& src);
  // Adds the dequantized int32 bias (reshaped to (1, C, 1, 1) for rank 4) and the fused relu.
  std::string bias_and_relu(const Node& n, std::string acc, int rank);
  // dequantize input 0 -> expr(x) -> quantize: the form of every one-input op.
  void unary(const Node& n, const std::function<std::string(const std::string& x)>& expr);

 private:
  std::string fresh(const std::string& base);
  // `value` at the example size, written as offset + slope * the symbolic variable when slope != 0.
  std::string dim_expr(int64_t value, int64_t slope) const;
  std::string input_type(int value_id) const;

  const Graph& g_;
  std::set<std::string> taken_;
  std::string batch_var_;  // the symbolic batch (a tirx int64 var) when the graph's batch is dynamic
  std::string size_var_;   // the symbolic dim's variable, when the graph has one
  std::vector<std::vector<int64_t>> value_slopes_;
  std::map<std::tuple<const Node*, std::string, size_t>, int64_t> attr_slopes_;
  std::ostringstream body_;
};

}  // namespace qnnpy
