#include "tvm_kernels/node_spec.h"

#include <cstring>
#include <map>
#include <stdexcept>

#include "ir/serialize.h"

namespace qnnpy {
namespace {

constexpr char kMagic[8] = {'Q', 'N', 'N', 'P', 'Y', 'K', '0', '1'};

void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

uint64_t get_u64(const uint8_t*& p, const uint8_t* end) {
  uint64_t v;
  if (static_cast<size_t>(end - p) < sizeof v) throw std::invalid_argument("qnnpy node spec is truncated");
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

// The one-node graph of g.nodes()[index] (see NodeSpec::graph).
Graph node_graph(const Graph& g, size_t index) {
  const Node& n = g.nodes()[index];
  Graph sub;
  std::map<int, int> value_ids;  // id in g -> id in sub
  Node copy = n;
  copy.inputs.clear();
  for (int id : n.inputs) {
    auto found = value_ids.find(id);
    if (found == value_ids.end()) {
      const Value& v = g.value(id);
      // The stand-in input of an 8-bit value takes another name, so that the value keeps its own;
      // float32 and index values are inputs as they are.
      const bool as_is = is_plain_dtype(v.dtype);
      int sub_id = as_is ? sub.add_input(v.name, v.shape, v.dtype) : sub.add_input(v.name + "_float", v.shape);
      if (!as_is) {
        Node quantize;
        quantize.op = "quantize";
        quantize.source = n.source;
        quantize.inputs = {sub_id};
        sub_id = sub.add_node(std::move(quantize), v);
      }
      found = value_ids.emplace(id, sub_id).first;
    }
    copy.inputs.push_back(found->second);
  }
  for (auto& role : copy.params) role.second = sub.add_param(g.param(role.second));
  const Value& out = g.value(n.output);
  sub.mark_output(sub.add_node(std::move(copy), out, out.shape));
  if (g.symbolic_dim()) {  // the node's attributes that follow the size; its inputs' shapes come with each call
    SymbolicDim sym = *g.symbolic_dim();
    sym.input_axes.clear();
    sym.attrs.clear();
    for (SymbolicDim::Attr a : g.symbolic_dim()->attrs) {
      if (a.node != static_cast<int>(index)) continue;
      a.node = static_cast<int>(sub.nodes().size()) - 1;
      sym.attrs.push_back(std::move(a));
    }
    sub.set_symbolic_dim(std::move(sym));
  }
  return sub;
}

}  // namespace

std::string encode_node_spec(const Graph& g, size_t index, Profile profile, const std::vector<Buffer>& layouts) {
  const Node& n = g.nodes().at(index);
  std::string out(kMagic, sizeof kMagic);
  const std::string name = profile_name(profile);
  put_u64(out, name.size());
  out += name;
  put_u64(out, n.inputs.size());
  for (int id : n.inputs) {
    out.push_back(static_cast<char>(layouts.at(id).torch_channels_last));
    out.push_back(static_cast<char>(layouts.at(id).torch_dense));
  }
  out += serialize_graph(node_graph(g, index));
  return out;
}

NodeSpec decode_node_spec(const uint8_t* data, size_t size) {
  const uint8_t *p = data, *end = data + size;
  if (size < sizeof kMagic || std::memcmp(p, kMagic, sizeof kMagic) != 0) {
    throw std::invalid_argument("not a qnnpy node spec (bad magic)");
  }
  p += sizeof kMagic;
  NodeSpec spec;
  const uint64_t name_size = get_u64(p, end);
  if (name_size > static_cast<size_t>(end - p)) throw std::invalid_argument("qnnpy node spec is truncated");
  spec.profile = parse_profile(std::string(reinterpret_cast<const char*>(p), name_size));
  p += name_size;
  const uint64_t inputs = get_u64(p, end);
  if (inputs > static_cast<size_t>(end - p) / 2) throw std::invalid_argument("qnnpy node spec is truncated");
  spec.input_layouts.resize(inputs);
  for (Buffer& b : spec.input_layouts) {
    b.torch_channels_last = *p++ != 0;
    b.torch_dense = *p++ != 0;
  }
  spec.graph = deserialize_graph(std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(end - p)));
  if (spec.graph.nodes().empty() || spec.node().inputs.size() != inputs) {
    throw std::invalid_argument("qnnpy node spec: the graph does not end with a node of " + std::to_string(inputs) +
                                " input(s)");
  }
  return spec;
}

}  // namespace qnnpy
