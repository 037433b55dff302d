// The self-contained description of one node that a kernels-form Relax module
// carries as a uint8 constant: the profile, the layout flags of the node's inputs
// and a one-node graph (the node, its params and the values it reads). Of a graph with
// a symbolic dim, the one-node graph has it too, with the node's attributes that follow
// the size and no input axes: each call gives the size and its inputs' shapes.
//
// Byte format: "QNNPYK01", the profile name (uint64 length + bytes), the input count
// (uint64), per input two bytes (torch_channels_last, torch_dense), then the graph
// in the `graph.qnnpy` format (ir/serialize.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/buffer.h"
#include "runtime/profile.h"

namespace qnnpy {

struct NodeSpec {
  Profile profile = Profile::Int32Bias;
  // Float inputs of the node are graph inputs; each 8-bit input is the output of a
  // quantize node that only carries its dtype, shape and qparams. The node runs last.
  Graph graph;
  std::vector<Buffer> input_layouts;  // flags only, one per input of the node

  const Node& node() const { return graph.nodes().back(); }
};

// The spec of g.nodes()[index]; `layouts` holds the flags of every value of g.
std::string encode_node_spec(const Graph& g, size_t index, Profile profile, const std::vector<Buffer>& layouts);
// Throws std::invalid_argument on bytes that are not a node spec.
NodeSpec decode_node_spec(const uint8_t* data, size_t size);

}  // namespace qnnpy
