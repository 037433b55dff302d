#include "emit/emitter.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "emit/exported_params.h"
#include "ops/op_def.h"

namespace qnnpy {
namespace {

// `dim0`, when given, names a symbolic first dimension: R.Tensor(("batch", 3, 224, 224), "float32").
std::string tensor_type(const Shape& shape, DType dtype, const std::string& dim0 = "") {
  std::string dims = shape_str(shape);
  if (!dim0.empty()) dims = "(\"" + dim0 + "\"" + dims.substr(dims.find_first_of(",)"));
  return "R.Tensor(" + dims + ", \"" + dtype_name(dtype) + "\")";
}

// Per-tensor qparams as constants; per-channel ones as the exported params.
std::string scale_arg(const QParams& q, const std::string& param_name) {
  return q.per_channel() ? param_name + "_scale" : float_const(q.scale[0]);
}

std::string zero_point_arg(const QParams& q, const std::string& param_name) {
  if (q.per_channel()) return has_nonzero_zero_point(q) ? param_name + "_zero_point" : int_const(0);
  return int_const(q.zero_point[0]);
}

}  // namespace

std::string float_const(float v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
  return std::string("R.const(") + buf + ", \"float32\")";
}

std::string float_literal(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string int_const(int64_t v) { return "R.const(" + std::to_string(v) + ", \"int32\")"; }

std::string scalar_const(double v, DType dtype) {
  if (dtype == DType::Bool) return std::string("R.const(") + (v != 0.0 ? "True" : "False") + ", \"bool\")";
  if (std::isinf(v)) return std::string("R.const(float(\"") + (v < 0 ? "-" : "") + "inf\"), \"float32\")";
  return float_const(static_cast<float>(v));
}

std::string call(const std::string& f, const std::string& x) { return f + "(" + x + ")"; }
std::string call(const std::string& f, const std::string& x, const std::string& y) { return f + "(" + x + ", " + y + ")"; }

std::string int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string padding4(const std::vector<int64_t>& p) { return int_list({p[0], p[1], p[0], p[1]}); }

Emitter::Emitter(const Graph& g) : g_(g) {
  for (const Value& v : g.values()) taken_.insert(v.name);
  for (const ExportedParam& p : exported_params(g)) {
    if (!taken_.insert(p.name).second) throw std::logic_error("duplicate Relax parameter name '" + p.name + "'");
  }
  if (g.dynamic_batch()) batch_var_ = fresh("batch");
  if (g.symbolic_dim()) {
    const SymbolicDim& sym = *g.symbolic_dim();
    size_var_ = fresh(sym.name);
    value_slopes_ = value_slopes(g);
    for (const SymbolicDim::Attr& a : sym.attrs) attr_slopes_[{&g.nodes()[a.node], a.key, a.entry}] = a.slope;
  }
}

std::string Emitter::dim_expr(int64_t value, int64_t slope) const {
  if (slope == 0) return std::to_string(value);
  const int64_t offset = value - slope * g_.symbolic_dim()->example;
  std::string s = slope == 1 ? size_var_ : size_var_ + " * " + std::to_string(slope);
  if (offset != 0) s += (offset > 0 ? " + " : " - ") + std::to_string(offset > 0 ? offset : -offset);
  return s;
}

std::string Emitter::value_shape_expr(int value_id) const {
  const Shape& shape = g_.value(value_id).shape;
  if (size_var_.empty()) return shape_expr(shape);
  std::string s = "R.shape([";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + value_dim_expr(value_id, i);
  return s + "])";
}

int64_t Emitter::dim_slope(int value_id, size_t axis) const {
  return value_slopes_.empty() ? 0 : value_slopes_.at(static_cast<size_t>(value_id)).at(axis);
}

std::string Emitter::value_dim_expr(int value_id, size_t axis) const {
  return dim_expr(g_.value(value_id).shape.at(axis), dim_slope(value_id, axis));
}

std::string Emitter::attr_entry(const Node& n, const std::string& key, size_t entry) const {
  auto it = attr_slopes_.find({&n, key, entry});
  return dim_expr(n.ints_attr(key).at(entry), it == attr_slopes_.end() ? 0 : it->second);
}

std::string Emitter::attr_list(const Node& n, const std::string& key) const {
  std::string s = "[";
  for (size_t i = 0; i < n.ints_attr(key).size(); ++i) s += (i ? ", " : "") + attr_entry(n, key, i);
  return s + "]";
}

std::string Emitter::attr_shape_expr(const Node& n, const std::string& key) const {
  if (size_var_.empty()) return shape_expr(n.ints_attr(key));
  return "R.shape(" + attr_list(n, key) + ")";
}

// An input's annotation: the symbolic variables (batch, the symbolic dim) as strings, which declares them.
std::string Emitter::input_type(int value_id) const {
  const Value& v = g_.value(value_id);
  if (size_var_.empty()) return tensor_type(v.shape, v.dtype, batch_var_);
  std::string dims = "(";
  for (size_t i = 0; i < v.shape.size(); ++i) {
    dims += (i ? ", " : "") + (dim_slope(value_id, i) ? "\"" + size_var_ + "\"" : std::to_string(v.shape[i]));
  }
  return "R.Tensor(" + dims + (v.shape.size() == 1 ? ",)" : ")") + ", \"" + dtype_name(v.dtype) + "\")";
}

std::string Emitter::shape_expr(const Shape& shape) const {
  std::string s = "R.shape([";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + (i == 0 && !batch_var_.empty() ? batch_var_ : std::to_string(shape[i]));
  }
  return s + "])";
}

std::string Emitter::run(const std::string& func_name) {
  std::ostringstream head;
  head << "# from tvm.script import ir as I\n"
       << "# from tvm.script import relax as R\n"
       << (batch_var_.empty() && size_var_.empty() ? "" : "# from tvm.script import tirx as T\n") << "\n"
       << "@I.ir_module\nclass Module:\n    @R.function\n    def " << func_name << "(";
  std::vector<std::string> args;
  for (int id : g_.inputs()) args.push_back(g_.value(id).name + ": " + input_type(id));
  for (const ExportedParam& p : exported_params(g_)) args.push_back(p.name + ": " + tensor_type(p.shape, p.dtype));
  for (size_t i = 0; i < args.size(); ++i) head << (i ? ",\n            " : "") << args[i];
  head << "):\n";
  if (!batch_var_.empty()) head << "        " << batch_var_ << " = T.int64()\n";
  if (!size_var_.empty()) head << "        " << size_var_ << " = T.int64()\n";
  head << "        R.func_attr({\"num_input\": " << g_.inputs().size() << "})\n"
       << "        with R.dataflow():\n";
  for (const Node& n : g_.nodes()) op_def(n).emit(*this, n);
  std::string result;
  if (g_.outputs().size() == 1) {
    result = g_.value(g_.outputs()[0]).name;
  } else {
    result = fresh("outputs");
    std::string tuple = "(";
    for (int id : g_.outputs()) tuple += g_.value(id).name + ", ";
    line(result, tuple + ")");
  }
  body_ << "            R.output(" << result << ")\n        return " << result << "\n";
  return head.str() + body_.str();
}

std::string Emitter::fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; !taken_.insert(name).second; ++k) name = base + "_" + std::to_string(k);
  return name;
}

void Emitter::line(const std::string& var, const std::string& expr) { body_ << "            " << var << " = " << expr << "\n"; }

std::string Emitter::emit(const std::string& base, const std::string& expr) {
  std::string var = fresh(base);
  line(var, expr);
  return var;
}

std::string Emitter::input(const Node& n, size_t i, const std::string& suffix) {
  const Value& v = g_.value(n.inputs.at(i));
  return emit(out_name(n) + "_" + suffix, "R.dequantize(" + v.name + ", " + float_const(v.q.scale[0]) + ", " +
                                              int_const(v.q.zero_point[0]) + ", out_dtype=\"float32\")");
}

std::string Emitter::param(const Param& p, const std::string& base) {
  std::string axis = p.q.per_channel() ? ", axis=0" : "";
  return emit(base, "R.dequantize(" + p.name + ", " + scale_arg(p.q, p.name) + ", " + zero_point_arg(p.q, p.name) + axis +
                        ", out_dtype=\"float32\")");
}

void Emitter::quantize_output(const Node& n, const std::string& src) {
  const Value& out = g_.value(n.output);
  line(out.name, "R.quantize(" + src + ", " + float_const(out.q.scale[0]) + ", " + int_const(out.q.zero_point[0]) +
                     ", out_dtype=\"" + dtype_name(out.dtype) + "\")");
}

std::string Emitter::bias_and_relu(const Node& n, std::string acc, int rank) {
  const std::string& o = out_name(n);
  if (n.has_param("bias")) {
    const Param& b = g_.node_param(n, "bias");
    std::string bias = param(b, o + "_bias");
    if (rank == 4) {
      bias = emit(o + "_bias_nchw", "R.reshape(" + bias + ", R.shape([1, " + std::to_string(b.shape[0]) + ", 1, 1]))");
    }
    acc = emit(o + "_biased", "R.add(" + acc + ", " + bias + ")");
  }
  if (n.ints.count("relu") && n.int_attr("relu")) acc = emit(o + "_relu", "R.nn.relu(" + acc + ")");
  return acc;
}

void Emitter::unary(const Node& n, const std::function<std::string(const std::string& x)>& expr) {
  const std::string x = input(n, 0, "x");
  quantize_output(n, emit(out_name(n) + "_f", expr(x)));
}

}  // namespace qnnpy
