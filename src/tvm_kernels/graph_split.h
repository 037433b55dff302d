// A graph cut into one call per node for the kernels form of a Relax module.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/profile.h"

namespace qnnpy {

struct NodeCall {
  std::string spec;     // encode_node_spec of the node
  DType dtype;          // of the node's output
  Shape storage_shape;  // the output as the runtime stores it: NHWC for rank-4 8-bit values
  // Of a graph with a symbolic dim: per axis of storage_shape, how its extent follows the size (ir/symbolic.h,
  // value_slopes); empty otherwise.
  std::vector<int64_t> storage_slopes;
};

// One call per node, in node order. The layout flags of the values (what PyTorch's
// memory format would be: some kernels round differently on channels_last inputs)
// follow from the graph alone; they are found by running the graph once on zero inputs.
std::vector<NodeCall> split_graph(const Graph& g, Profile profile);

// The shape in which the runtime stores a value (runtime/layout.h: rank-4 8-bit
// values are NHWC, everything else in logical order).
Shape storage_shape(const Value& v);

}  // namespace qnnpy
