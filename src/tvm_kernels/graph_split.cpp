#include "tvm_kernels/graph_split.h"

#include "runtime/node_runner.h"
#include "tvm_kernels/node_spec.h"

namespace qnnpy {
namespace {

// The layout flags of every value after one run on zero inputs; data is dropped as
// soon as no later node reads it.
std::vector<Buffer> layout_flags(const Graph& g, Profile profile) {
  std::vector<Buffer> values(g.values().size());
  for (int id : g.inputs()) values[id].f.assign(static_cast<size_t>(num_elements(g.value(id).shape)), 0.0f);
  std::vector<size_t> last_use(g.values().size(), 0);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (int id : g.nodes()[i].inputs) last_use[id] = i;
  const KernelSet& k = kernel_set(default_isa());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    NodeRunner(g, n, profile).run(g, n, values, k, 1);
    for (int id : n.inputs) {
      if (last_use[id] == i) values[id].q.clear(), values[id].q.shrink_to_fit(), values[id].f = {};
    }
  }
  return values;
}

}  // namespace

Shape storage_shape(const Value& v) {
  const Shape& s = v.shape;
  if (v.dtype == DType::Float32 || s.size() != 4) return s;
  return {s[0], s[2], s[3], s[1]};
}

std::vector<NodeCall> split_graph(const Graph& g, Profile profile) {
  const std::vector<Buffer> layouts = layout_flags(g, profile);
  std::vector<NodeCall> calls;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Value& out = g.value(g.nodes()[i].output);
    calls.push_back({encode_node_spec(g, i, profile, layouts), out.dtype, storage_shape(out)});
  }
  return calls;
}

}  // namespace qnnpy
