#include "runtime/node_runner.h"

#include <stdexcept>

#include "ops/op_def.h"

namespace qnnpy {

NodeRunner::NodeRunner(const Graph& g, const Node& n, Profile profile, bool input_dies)
    : profile_(profile), input_dies_(input_dies) {
  const OpDef& op = op_def(n);
  if (!op.make_runner) throw std::invalid_argument("runtime: op '" + n.op + "' (" + n.source + ") cannot run: " + op.not_runnable);
  op_ = op.make_runner(g, n, profile);
}

const char* NodeRunner::run(const Graph& g, const Node& n, std::vector<Buffer>& values, const KernelSet& k,
                            int threads) const {
  return op_->run(OpArgs{g, n, values, k, profile_, threads, input_dies_});
}

}  // namespace qnnpy
