#include "tvm_kernels/graph_split.h"

#include "runtime/value_layouts.h"
#include "tvm_kernels/node_spec.h"

namespace qnnpy {
Shape storage_shape(const Value& v) {
  const Shape& s = v.shape;
  if (is_plain_dtype(v.dtype) || s.size() != 4) return s;
  return {s[0], s[2], s[3], s[1]};
}

std::vector<NodeCall> split_graph(const Graph& g, Profile profile) {
  const std::vector<Buffer> layouts = value_layouts(g, profile);
  std::vector<NodeCall> calls;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Value& out = g.value(g.nodes()[i].output);
    calls.push_back({encode_node_spec(g, i, profile, layouts), out.dtype, storage_shape(out)});
  }
  return calls;
}

}  // namespace qnnpy
