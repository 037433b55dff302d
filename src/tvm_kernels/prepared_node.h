// Nodes prepared from their spec tensors: decoded and weights packed once per spec
// tensor, found again on every later call with the same tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <tvm/ffi/container/tensor.h>

#include "runtime/node_runner.h"
#include "tvm_kernels/node_spec.h"

namespace qnnpy {

// A node ready to run: its one-node graph (of a spec with a symbolic dim: rebuilt at one size) and its runner.
struct PreparedNode {
  PreparedNode(Graph g, Profile p, std::vector<Buffer> layouts)
      : graph(std::move(g)), profile(p), input_layouts(std::move(layouts)), runner(graph, node(), profile) {}
  const Node& node() const { return graph.nodes().back(); }
  Graph graph;
  Profile profile;
  std::vector<Buffer> input_layouts;  // flags only, one per input of the node
  NodeRunner runner;
};

// What a spec tensor decodes to: the prepared node, or for a spec with a symbolic dim the node at each size met
// (the last kSizes kept; weights are packed once for all of them, runtime/packed_weights.h).
class SpecNode {
 public:
  static constexpr size_t kSizes = 8;
  explicit SpecNode(NodeSpec spec);
  bool symbolic() const { return spec_.graph.symbolic_dim().has_value(); }
  const Node& node() const { return spec_.node(); }
  const Graph& spec_graph() const { return spec_.graph; }
  // The node of a spec without a symbolic dim.
  std::shared_ptr<const PreparedNode> fixed() const { return fixed_; }
  // The node at `size`, its inputs shaped `input_shapes` (logical order); throws std::invalid_argument naming the
  // size or the node that refuses it.
  std::shared_ptr<const PreparedNode> at(int64_t size, const std::vector<Shape>& input_shapes) const;

 private:
  NodeSpec spec_;
  std::shared_ptr<const PreparedNode> fixed_;
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<int64_t, std::shared_ptr<const PreparedNode>>> sizes_;  // most recent last
};

// The node of `spec`, a 1-D uint8 tensor holding a node spec. The cache is keyed by
// the tensor object and keeps a reference to it, so a key cannot be reused by another
// tensor while its entry lives; entries whose tensor nobody else holds any more (the
// module that owned it was freed) are dropped when a new node is prepared.
std::shared_ptr<const SpecNode> spec_node(const tvm::ffi::Tensor& spec);

// How many nodes were prepared (decoded and packed) since the library was loaded.
int64_t prepared_node_count();
// How many prepared nodes the cache holds now.
int64_t cached_node_count();

}  // namespace qnnpy
