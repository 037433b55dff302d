#include "ir/rebatch.h"

#include <stdexcept>
#include <utility>

namespace qnnpy {
namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument("dynamic batch: " + msg); }

// The graph's batch: dim 0 of its inputs, which must agree.
int64_t graph_batch(const Graph& g) {
  int64_t batch = -1;
  for (int id : g.inputs()) {
    const Value& v = g.value(id);
    if (v.shape.empty()) fail("input '" + v.name + "' has rank 0 and no batch dimension");
    if (batch >= 0 && v.shape[0] != batch) {
      fail("inputs differ in dim 0 (" + std::to_string(batch) + " and " + std::to_string(v.shape[0]) + " for '" + v.name + "')");
    }
    batch = v.shape[0];
  }
  if (batch < 0) fail("the graph has no input");
  return batch;
}

Shape with_dim0(Shape s, int64_t batch) {
  if (!s.empty()) s[0] = batch;
  return s;
}

}  // namespace

Graph with_batch(const Graph& g, int64_t batch) {
  if (batch < 1) fail("batch size must be >= 1, got " + std::to_string(batch));
  const int64_t original = graph_batch(g);
  Graph out;
  for (const Param& p : g.params()) out.add_param(p);
  std::vector<int> new_id(g.values().size(), -1);
  // Values computed from constants alone (float_constant nodes and what only they feed): no batch.
  std::vector<bool> batch_free(g.values().size(), false);
  for (int id : g.inputs()) new_id[id] = out.add_input(g.value(id).name, with_dim0(g.value(id).shape, batch), g.value(id).dtype);
  for (const Node& n : g.nodes()) {
    Node copy = n;
    bool constant = true;
    for (int& in : copy.inputs) {
      constant = constant && batch_free[in];
      in = new_id[in];
    }
    const Value& v = g.value(n.output);
    if (constant) {
      batch_free[n.output] = true;
      new_id[n.output] = out.add_node(std::move(copy), v, v.shape);
      continue;
    }
    auto target = copy.ints.find("shape");
    if (target != copy.ints.end()) target->second = with_dim0(target->second, batch);
    if (v.shape.empty() || v.shape[0] != original) {
      fail(n.op + " (" + n.source + ") output " + shape_str(v.shape) + " does not have the batch " +
           std::to_string(original) + " as dim 0");
    }
    Value value = v;
    const Shape expected = with_dim0(v.shape, batch);
    try {
      new_id[n.output] = out.add_node(std::move(copy), std::move(value), expected);
    } catch (const std::invalid_argument& e) {
      fail(std::string(e.what()) + " (at batch " + std::to_string(batch) + ")");
    }
  }
  for (int id : g.outputs()) out.mark_output(new_id[id]);
  out.set_dynamic_batch(g.dynamic_batch());
  return out;
}

void check_dynamic_batch(const Graph& g) { with_batch(g, graph_batch(g) + 1); }

}  // namespace qnnpy
