// What an op's definition makes for one node, once per Executor (weights packed,
// tables built), and what runs on every call.
#pragma once

#include <memory>

#include "ir/graph.h"
#include "runtime/ops/op_args.h"
#include "runtime/profile.h"

namespace qnnpy {

class PreparedOp {
 public:
  virtual ~PreparedOp() = default;
  // Computes the node's output buffer on up to a.threads workers. Returns the kernel used when
  // the op chooses among several (conv / linear), "" otherwise.
  virtual const char* run(const OpArgs& a) const = 0;
};

using OpRunner = void (*)(const OpArgs&);

// An op that calls one function and keeps no state.
class StatelessOp final : public PreparedOp {
 public:
  explicit StatelessOp(OpRunner f) : f_(f) {}
  const char* run(const OpArgs& a) const override {
    f_(a);
    return "";
  }

 private:
  OpRunner f_;
};

// The runner factory of an op whose runner is the function F.
template <OpRunner F>
std::unique_ptr<PreparedOp> function_runner(const Graph&, const Node&, Profile) {
  return std::make_unique<StatelessOp>(F);
}

// The runner factory of an op whose PreparedOp R is built from (graph, node, profile).
template <class R>
std::unique_ptr<PreparedOp> prepared_runner(const Graph& g, const Node& n, Profile profile) {
  return std::make_unique<R>(g, n, profile);
}

}  // namespace qnnpy
