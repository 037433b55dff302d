// One node of a graph run on its own, on value buffers the caller owns: what the
// executor does for each node, for callers that run nodes one at a time (the TVM
// kernel library). Weighted nodes (conv2d, linear, conv_transpose2d) pack their
// weights once, when the runner is made.
#pragma once

#include <memory>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernels.h"
#include "runtime/buffer.h"
#include "runtime/conv_transpose.h"
#include "runtime/ops/op_args.h"
#include "runtime/prepared_layer.h"
#include "runtime/profile.h"

namespace qnnpy {

class NodeRunner {
 public:
  // Throws std::invalid_argument naming the op and its source when no kernel runs it.
  NodeRunner(const Graph& g, const Node& n, Profile profile);

  // Runs the node on `values` (indexed by value id of the graph it was made for),
  // writing its output buffer. Returns the kernel of a weighted node, "" otherwise.
  const char* run(const Graph& g, const Node& n, std::vector<Buffer>& values, const KernelSet& k, int threads) const;

 private:
  Profile profile_;
  std::unique_ptr<PreparedLayer> layer_;
  std::unique_ptr<TransposedConv> transposed_;
  const OpRunner* runner_ = nullptr;
};

}  // namespace qnnpy
