#include "runtime/value_layouts.h"

#include "kernels/kernels.h"
#include "runtime/node_runner.h"

namespace qnnpy {

std::vector<Buffer> value_layouts(const Graph& g, Profile profile) {
  std::vector<Buffer> values(g.values().size());
  for (int id : g.inputs()) {
    const size_t count = static_cast<size_t>(num_elements(g.value(id).shape));
    if (is_integer_storage(g.value(id).dtype)) {
      values[id].idx.assign(count, 0);  // index 0 of every table; offsets of empty bags
    } else {
      values[id].f.assign(count, 0.0f);
    }
  }
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

}  // namespace qnnpy
