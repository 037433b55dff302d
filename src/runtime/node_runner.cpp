#include "runtime/node_runner.h"

#include <stdexcept>

#include "runtime/conv_runner.h"

namespace qnnpy {

NodeRunner::NodeRunner(const Graph& g, const Node& n, Profile profile) : profile_(profile) {
  if (n.op == "conv2d" || n.op == "linear") {
    layer_ = std::make_unique<PreparedLayer>(prepare_layer(g, n, profile));
  } else if (n.op == "conv_transpose2d") {
    transposed_ = std::make_unique<TransposedConv>(g, n, profile);
  } else if (!(runner_ = find_op_runner(n.op))) {
    throw std::invalid_argument("runtime: no kernel for op '" + n.op + "' (" + n.source + ")");
  }
}

const char* NodeRunner::run(const Graph& g, const Node& n, std::vector<Buffer>& values, const KernelSet& k,
                            int threads) const {
  const OpArgs args{g, n, values, k, profile_};
  if (layer_) return run_weighted(args, *layer_, threads);
  if (transposed_) return transposed_->run(args, threads);
  (*runner_)(args);
  return "";
}

}  // namespace qnnpy
