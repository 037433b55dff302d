#include "ir/graph.h"

#include <cctype>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "ir/limits.h"
#include "ops/op_def.h"

namespace qnnpy {

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

AxisSplit split_at_axis(const Shape& shape, size_t axis) {
  AxisSplit s{1, shape[axis], 1};
  for (size_t d = 0; d < axis; ++d) s.outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

int64_t checked_num_elements(const Shape& shape, const std::string& what) {
  if (static_cast<int64_t>(shape.size()) > kMaxRank) {
    throw std::invalid_argument(what + ": rank " + std::to_string(shape.size()) + " exceeds " + std::to_string(kMaxRank));
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 1 || d > kMaxExtent) {
      throw std::invalid_argument(what + ": shape " + shape_str(shape) + " has an axis outside [1, " +
                                  std::to_string(kMaxExtent) + "]");
    }
    n *= d;  // n <= kMaxElements and d <= kMaxExtent: no overflow
    if (n > kMaxElements) {
      throw std::invalid_argument(what + ": shape " + shape_str(shape) + " holds more than " +
                                  std::to_string(kMaxElements) + " elements");
    }
  }
  return n;
}

namespace {

// Quantization parameters of a param: finite positive scales, one zero point per
// scale, and per channel one scale per index of `axis`.
void check_param_qparams(const Param& p) {
  const QParams& q = p.q;
  auto fail = [&](const std::string& msg) { throw std::invalid_argument("param '" + p.name + "': " + msg); };
  if (q.scale.size() != q.zero_point.size()) fail("scale and zero point counts differ");
  if (q.axis < -1 || (q.per_channel() && q.axis >= static_cast<int>(p.shape.size()))) {
    fail("quantization axis " + std::to_string(q.axis) + " outside its rank " + std::to_string(p.shape.size()));
  }
  if (q.per_channel() && static_cast<int64_t>(q.scale.size()) != p.shape[q.axis]) {
    fail(std::to_string(q.scale.size()) + " per-channel scales for " + std::to_string(p.shape[q.axis]) + " channels");
  }
  if (!q.per_channel() && q.scale.size() > 1) fail("per-tensor quantization needs one scale");
  for (float s : q.scale) {
    if (!(s > 0.0f) || !std::isfinite(s)) fail("scale " + std::to_string(s) + " is not a finite positive number");
  }
  if ((p.dtype == DType::Int64 || p.dtype == DType::Bool) && !q.empty()) fail("int64 and bool params take no quantization parameters");
  if (p.dtype == DType::Float32 || q.empty()) return;
  for (int32_t zp : q.zero_point) {
    if (zp < dtype_min(p.dtype) || zp > dtype_max(p.dtype)) {
      fail("zero point " + std::to_string(zp) + " outside the range of " + dtype_name(p.dtype));
    }
  }
}

}  // namespace

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << (shape.size() == 1 ? ",)" : ")");
  return os.str();
}

void check_printable(const std::string& text, const std::string& what) {
  for (unsigned char c : text) {
    if (c >= 0x20 && c != 0x7f) continue;
    std::ostringstream shown;
    for (unsigned char d : text) {
      if (d >= 0x20 && d != 0x7f) shown << d;
      else shown << "\\x" << std::hex << std::setw(2) << std::setfill('0') << int(d) << std::dec;
    }
    throw std::invalid_argument(what + " '" + shown.str() + "' holds a control character");
  }
}

int64_t Node::int_attr(const std::string& key) const {
  const auto& v = ints_attr(key);
  if (v.size() != 1) throw std::invalid_argument(op + " (" + source + "): attribute '" + key + "' must hold one value");
  return v[0];
}

const std::vector<int64_t>& Node::ints_attr(const std::string& key) const {
  auto it = ints.find(key);
  if (it == ints.end()) throw std::invalid_argument(op + " (" + source + "): missing attribute '" + key + "'");
  return it->second;
}

double Node::float_attr(const std::string& key) const {
  auto it = floats.find(key);
  if (it == floats.end()) throw std::invalid_argument(op + " (" + source + "): missing attribute '" + key + "'");
  return it->second;
}

std::string Graph::unique_name(const std::string& base) {
  std::string name;
  for (char c : base) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "v_" + name;
  std::string candidate = name;
  for (int k = 1; used_names_.count(candidate); ++k) candidate = name + "_" + std::to_string(k);
  used_names_.insert(candidate);
  return candidate;
}

int Graph::add_value(Value v) {
  values_.push_back(std::move(v));
  return static_cast<int>(values_.size()) - 1;
}

int Graph::add_input(const std::string& name, const Shape& shape, DType dtype) {
  check_mutable();
  check_printable(name, "input name");
  checked_num_elements(shape, "input '" + name + "'");
  if (!is_plain_dtype(dtype)) {
    throw std::invalid_argument("input '" + name + "': dtype " + dtype_name(dtype) +
                                " is not an input dtype (float32, int64 / int32 or bool)");
  }
  Value v;
  v.name = unique_name(name);
  v.dtype = dtype;
  v.shape = shape;
  int id = add_value(std::move(v));
  inputs_.push_back(id);
  return id;
}

int Graph::add_param(Param p) {
  check_mutable();
  p.check_values();
  check_printable(p.name, "param name");
  size_t expected = static_cast<size_t>(checked_num_elements(p.shape, "param '" + p.name + "'")) * dtype_size(p.dtype);
  if (p.bytes.size() != expected) {
    throw std::invalid_argument("param '" + p.name + "': " + std::to_string(p.bytes.size()) +
                                " bytes do not fit shape " + shape_str(p.shape) + " of " + dtype_name(p.dtype));
  }
  if (p.dtype == DType::Bool) {
    for (uint8_t b : p.bytes) {
      if (b > 1) throw std::invalid_argument("param '" + p.name + "' holds the byte " + std::to_string(b) + " (bool must be 0 or 1)");
    }
  }
  check_param_qparams(p);
  if (p.dtype == DType::Float32) {  // infinities: allowed in constants, refused by the ops' rules elsewhere (Checker::param)
    const float* f = p.data<float>();
    for (size_t i = 0; i < p.bytes.size() / sizeof(float); ++i) {
      if (std::isnan(f[i])) throw std::invalid_argument("param '" + p.name + "' holds nan (not finite)");
    }
  }
  p.name = unique_name(p.name);
  params_.push_back(std::move(p));
  return static_cast<int>(params_.size()) - 1;
}

const Value& Graph::value(int id) const {
  if (id < 0 || id >= static_cast<int>(values_.size())) throw std::out_of_range("no value with id " + std::to_string(id));
  return values_[id];
}

void Param::check_values() const {
  if (bytes.released()) throw std::logic_error("param '" + name + "' holds no values: " + released_by);
}

const Param& Graph::param(int id) const {
  if (id < 0 || id >= static_cast<int>(params_.size())) throw std::out_of_range("no param with id " + std::to_string(id));
  return params_[id];
}

int Graph::share_params(const Graph& other) {
  std::map<std::string, const Param*> by_name;
  for (const Param& q : other.params_) {
    if (!q.bytes.released()) by_name[q.name] = &q;
  }
  int shared = 0;
  for (Param& p : params_) {
    auto it = by_name.find(p.name);
    if (it == by_name.end() || p.bytes.released()) continue;
    const Param& q = *it->second;
    if (q.dtype != p.dtype || q.shape != p.shape || q.bytes.vector() != p.bytes.vector()) continue;
    p.bytes.share(q.bytes);
    ++shared;
  }
  return shared;
}

bool Graph::release_param(int id, const std::string& why) {
  Param& p = params_.at(static_cast<size_t>(id));
  p.released_by = why;
  return p.bytes.release();
}

const Param& Graph::node_param(const Node& n, const std::string& role) const {
  auto it = n.params.find(role);
  if (it == n.params.end()) throw std::invalid_argument(n.op + " (" + n.source + "): missing param '" + role + "'");
  return param(it->second);
}

int Graph::add_node(Node node, Value output, const Shape& expected_shape) {
  check_mutable();
  check_printable(node.op, "op name");
  check_printable(node.source, node.op + ": source");
  for (const auto& [role, id] : node.params) check_printable(role, node.op + " (" + node.source + "): param role");
  for (const auto& [key, v] : node.ints) check_printable(key, node.op + " (" + node.source + "): attribute");
  for (const auto& [key, v] : node.floats) check_printable(key, node.op + " (" + node.source + "): attribute");
  const std::string where = node.op + " (" + node.source + "): ";
  for (int id : node.inputs) {
    if (id < 0 || id >= static_cast<int>(values_.size())) throw std::invalid_argument(where + "no value with id " + std::to_string(id));
  }
  for (const auto& [role, id] : node.params) {
    if (id < 0 || id >= static_cast<int>(params_.size())) {
      throw std::invalid_argument(where + "param '" + role + "': no param with id " + std::to_string(id));
    }
  }
  output.shape = check_node(*this, node, output);
  if (!expected_shape.empty() && expected_shape != output.shape) {
    throw std::invalid_argument(node.op + " (" + node.source + "): inferred output shape " + shape_str(output.shape) +
                                " but the recorded one (what PyTorch produced, or the graph file's) is " +
                                shape_str(expected_shape));
  }
  output.name = unique_name(output.name);
  node.output = add_value(std::move(output));
  nodes_.push_back(std::move(node));
  return nodes_.back().output;
}

std::string Graph::rename_value(int value_id, const std::string& name) {
  check_mutable();
  check_printable(name, "value name");
  value(value_id);
  Value& v = values_[value_id];
  used_names_.erase(v.name);
  v.name = unique_name(name);
  return v.name;
}

void Graph::mark_output(int value_id) {
  check_mutable();
  value(value_id);
  outputs_.push_back(value_id);
}

}  // namespace qnnpy

namespace qnnpy {

void Graph::check_mutable() const {
  if (frozen()) throw std::logic_error("the graph is in use by an executor and can no longer change: build a new graph");
}

}  // namespace qnnpy
