#include "tvm_kernels/graph_split.h"

#include "ir/symbolic.h"
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
  const std::vector<std::vector<int64_t>> slopes = g.symbolic_dim() ? value_slopes(g) : std::vector<std::vector<int64_t>>{};
  std::vector<NodeCall> calls;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const int id = g.nodes()[i].output;
    const Value& out = g.value(id);
    std::vector<int64_t> out_slopes;
    if (!slopes.empty()) {  // in storage order, as the shape
      Value sloped = out;
      sloped.shape = slopes[static_cast<size_t>(id)];
      out_slopes = storage_shape(sloped);
    }
    calls.push_back({encode_node_spec(g, i, profile, layouts), out.dtype, storage_shape(out), std::move(out_slopes)});
  }
  return calls;
}

}  // namespace qnnpy
