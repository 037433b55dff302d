// One node of a graph, prepared once and run on value buffers the caller owns:
// what the executor does for each node, usable by callers that run nodes one at a
// time. The node's op definition (src/ops) makes what runs.
#pragma once

#include <memory>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernels.h"
#include "runtime/buffer.h"
#include "runtime/prepared_op.h"
#include "runtime/profile.h"

namespace qnnpy {

class NodeRunner {
 public:
  // Throws std::invalid_argument naming the op and its source when the op cannot run. `input_dies`: no later node
  // reads the node's first input and it is no graph output, so the op may take its buffer (OpArgs::input_dies).
  NodeRunner(const Graph& g, const Node& n, Profile profile, bool input_dies = false);

  // Runs the node on `values` (indexed by value id of the graph it was made for),
  // writing its output buffer. Returns the kernel of a weighted node, "" otherwise.
  const char* run(const Graph& g, const Node& n, std::vector<Buffer>& values, const KernelSet& k, int threads) const;

  // What the op's definition made for the node (e.g. a TableRunner holding its tables).
  const PreparedOp& prepared() const { return *op_; }

 private:
  Profile profile_;
  bool input_dies_ = false;
  std::unique_ptr<PreparedOp> op_;
};

}  // namespace qnnpy
