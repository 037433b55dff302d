#include "ir/serialize.h"

#include <cctype>
#include <cstring>
#include <stdexcept>
#include <string>

#include "ir/limits.h"

namespace qnnpy {
namespace {

// A graph file starts with "QNNPYG" and the format version in two ASCII digits. Integer
// (int64 / int32 index) inputs need no new version: a value's dtype byte already holds them, and
// a qnnpy without them refuses such a file as holding an unknown dtype. The same holds for bool
// values and the int64 / bool params of float ops' constants.
constexpr char kMagic[6] = {'Q', 'N', 'N', 'P', 'Y', 'G'};
constexpr int kFormatVersion = 1;

class Writer {
 public:
  void raw(const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }
  template <class T> void pod(T v) { raw(&v, sizeof v); }
  void str(const std::string& s) { pod<uint64_t>(s.size()); raw(s.data(), s.size()); }
  template <class T> void vec(const std::vector<T>& v) { pod<uint64_t>(v.size()); raw(v.data(), v.size() * sizeof(T)); }
  void qparams(const QParams& q) { vec(q.scale); vec(q.zero_point); pod<int32_t>(q.axis); }
  std::string out;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  void raw(void* p, size_t n) {
    if (n > s_.size() - pos_) throw std::invalid_argument("graph file is truncated");
    if (n == 0) return;  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(p, s_.data() + pos_, n);
    pos_ += n;
  }
  template <class T> T pod() { T v; raw(&v, sizeof v); return v; }
  std::string str() { std::string s(count(1), '\0'); raw(s.data(), s.size()); return s; }
  template <class T> std::vector<T> vec() {
    std::vector<T> v(count(sizeof(T)));
    raw(v.data(), v.size() * sizeof(T));
    return v;
  }
  QParams qparams() {
    QParams q;
    q.scale = vec<float>();
    q.zero_point = vec<int32_t>();
    q.axis = pod<int32_t>();
    return q;
  }
  bool done() const { return pos_ == s_.size(); }

 private:
  size_t count(size_t elem) {
    uint64_t n = pod<uint64_t>();
    if (n > (s_.size() - pos_) / elem) throw std::invalid_argument("graph file holds a bad length");
    return static_cast<size_t>(n);
  }
  const std::string& s_;
  size_t pos_ = 0;
};

void write_value(Writer& w, const Value& v) {
  w.str(v.name);
  w.pod<uint8_t>(static_cast<uint8_t>(v.dtype));
  w.vec(v.shape);
  w.qparams(v.q);
}

Value read_value(Reader& r) {
  Value v;
  v.name = r.str();
  v.dtype = static_cast<DType>(r.pod<uint8_t>());
  if (v.dtype > DType::Bool) throw std::invalid_argument("graph file holds an unknown dtype");
  v.shape = r.vec<int64_t>();
  v.q = r.qparams();
  return v;
}

void write_symbolic(Writer& w, const SymbolicDim& s) {
  w.str(s.name);
  w.pod<int64_t>(s.example);
  w.pod<int64_t>(s.max);
  w.pod<uint64_t>(s.input_axes.size());
  for (const auto& [input, axis] : s.input_axes) { w.pod<int32_t>(input); w.pod<int32_t>(axis); }
  w.pod<uint64_t>(s.attrs.size());
  for (const SymbolicDim::Attr& a : s.attrs) {
    w.pod<int32_t>(a.node);
    w.str(a.key);
    w.pod<int32_t>(a.entry);
    w.pod<int64_t>(a.slope);
  }
}

// Checked against the graph read before it, so that at_size indexes only what exists.
SymbolicDim read_symbolic(Reader& r, const Graph& g) {
  auto bad = [](const std::string& what) { return std::invalid_argument("graph file: symbolic dim: " + what); };
  SymbolicDim s;
  s.name = r.str();
  check_printable(s.name, "graph file: symbolic dim name");
  s.example = r.pod<int64_t>();
  s.max = r.pod<int64_t>();
  if (s.example < 1 || s.max < s.example || s.max > kMaxExtent) throw bad("bad sizes");
  for (uint64_t k = r.pod<uint64_t>(); k > 0; --k) {
    const int input = r.pod<int32_t>(), axis = r.pod<int32_t>();
    if (input < 0 || input >= static_cast<int>(g.inputs().size())) throw bad("no such input");
    const Shape& shape = g.value(g.inputs()[input]).shape;
    if (axis < 0 || axis >= static_cast<int>(shape.size()) || shape[axis] != s.example) throw bad("bad input axis");
    s.input_axes.emplace_back(input, axis);
  }
  for (uint64_t k = r.pod<uint64_t>(); k > 0; --k) {
    SymbolicDim::Attr a;
    a.node = r.pod<int32_t>();
    a.key = r.str();
    a.entry = r.pod<int32_t>();
    a.slope = r.pod<int64_t>();
    if (a.node < 0 || a.node >= static_cast<int>(g.nodes().size())) throw bad("no such node");
    const auto& ints = g.nodes()[a.node].ints;
    auto it = ints.find(a.key);
    if (it == ints.end() || a.entry < 0 || a.entry >= static_cast<int>(it->second.size())) throw bad("no such attribute");
    if (a.slope < -kMaxExtent || a.slope > kMaxExtent) throw bad("bad slope");
    s.attrs.push_back(std::move(a));
  }
  return s;
}

}  // namespace

std::string serialize_graph(const Graph& g) {
  Writer w;
  w.raw(kMagic, sizeof kMagic);
  const char version[2] = {static_cast<char>('0' + kFormatVersion / 10), static_cast<char>('0' + kFormatVersion % 10)};
  w.raw(version, sizeof version);
  w.pod<uint64_t>(g.params().size());
  for (const Param& p : g.params()) {
    p.check_values();
    w.str(p.name);
    w.pod<uint8_t>(static_cast<uint8_t>(p.dtype));
    w.vec(p.shape);
    w.vec(p.bytes.vector());
    w.qparams(p.q);
    w.pod<uint8_t>(p.exported);
  }
  // Values are inputs or node outputs; write them in id order, tagged.
  std::vector<int> producer(g.values().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i) producer[g.nodes()[i].output] = static_cast<int>(i);
  w.pod<uint64_t>(g.values().size());
  for (size_t id = 0; id < g.values().size(); ++id) {
    w.pod<int32_t>(producer[id]);
    write_value(w, g.values()[id]);
    if (producer[id] < 0) continue;
    const Node& n = g.nodes()[producer[id]];
    w.str(n.op);
    w.str(n.source);
    w.vec(n.inputs);
    w.pod<uint64_t>(n.params.size());
    for (const auto& kv : n.params) { w.str(kv.first); w.pod<int32_t>(kv.second); }
    w.pod<uint64_t>(n.ints.size());
    for (const auto& kv : n.ints) { w.str(kv.first); w.vec(kv.second); }
    w.pod<uint64_t>(n.floats.size());
    for (const auto& kv : n.floats) { w.str(kv.first); w.pod<double>(kv.second); }
  }
  w.vec(g.inputs());
  w.vec(g.outputs());
  // Optional trailing flags (files without them read as static): 1 dynamic batch, 2 a symbolic dim follows.
  const uint8_t flags = (g.dynamic_batch() ? 1 : 0) | (g.symbolic_dim() ? 2 : 0);
  if (flags) w.pod<uint8_t>(flags);
  if (g.symbolic_dim()) write_symbolic(w, *g.symbolic_dim());
  return w.out;
}

Graph deserialize_graph(const std::string& bytes) {
  Reader r(bytes);
  char magic[sizeof kMagic];
  r.raw(magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) throw std::invalid_argument("not a qnnpy graph file (bad magic)");
  char digits[2];
  r.raw(digits, sizeof digits);
  if (!std::isdigit(static_cast<unsigned char>(digits[0])) || !std::isdigit(static_cast<unsigned char>(digits[1]))) {
    throw std::invalid_argument("not a qnnpy graph file (bad format version)");
  }
  const int version = (digits[0] - '0') * 10 + (digits[1] - '0');
  if (version != kFormatVersion) {
    throw std::invalid_argument("graph file format version " + std::to_string(version) + "; this qnnpy reads version " +
                                std::to_string(kFormatVersion) + (version > kFormatVersion ? " (the file comes from a newer qnnpy: upgrade qnnpy)" : " (convert the model again)"));
  }
  Graph g;
  uint64_t num_params = r.pod<uint64_t>();
  for (uint64_t i = 0; i < num_params; ++i) {
    Param p;
    p.name = r.str();
    p.dtype = static_cast<DType>(r.pod<uint8_t>());
    if (p.dtype > DType::Bool) throw std::invalid_argument("graph file holds an unknown dtype");
    p.shape = r.vec<int64_t>();
    p.bytes = r.vec<uint8_t>();
    p.q = r.qparams();
    p.exported = r.pod<uint8_t>() != 0;
    g.add_param(std::move(p));
  }
  uint64_t num_values = r.pod<uint64_t>();
  std::vector<int> new_id;
  for (uint64_t id = 0; id < num_values; ++id) {
    int32_t producer = r.pod<int32_t>();
    Value v = read_value(r);
    if (producer < 0) {
      new_id.push_back(g.add_input(v.name, v.shape, v.dtype));
      continue;
    }
    Node n;
    n.op = r.str();
    n.source = r.str();
    for (int old : r.vec<int>()) {
      if (old < 0 || old >= static_cast<int>(new_id.size())) throw std::invalid_argument("graph file: node input out of order");
      n.inputs.push_back(new_id[old]);
    }
    for (uint64_t k = r.pod<uint64_t>(); k > 0; --k) {
      std::string role = r.str();
      int32_t param = r.pod<int32_t>();
      n.params[role] = param;
    }
    for (uint64_t k = r.pod<uint64_t>(); k > 0; --k) { std::string key = r.str(); n.ints[key] = r.vec<int64_t>(); }
    for (uint64_t k = r.pod<uint64_t>(); k > 0; --k) { std::string key = r.str(); n.floats[key] = r.pod<double>(); }
    Shape shape = v.shape;
    new_id.push_back(g.add_node(std::move(n), std::move(v), shape));
  }
  std::vector<int> inputs = r.vec<int>();  // inputs were re-added in id order above
  for (int old : r.vec<int>()) {
    if (old < 0 || old >= static_cast<int>(new_id.size())) throw std::invalid_argument("graph file: bad output id");
    g.mark_output(new_id[old]);
  }
  if (!r.done()) {
    const uint8_t flags = r.pod<uint8_t>();
    if (flags & ~3) throw std::invalid_argument("graph file holds unknown flags");
    g.set_dynamic_batch(flags & 1);
    if (flags & 2) g.set_symbolic_dim(read_symbolic(r, g));
  }
  if (inputs.size() != g.inputs().size() || !r.done()) throw std::invalid_argument("graph file is inconsistent");
  return g;
}

}  // namespace qnnpy
