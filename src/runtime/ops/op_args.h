// What a runtime op sees: its node, the values of the run, the kernels and the profile.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernels.h"
#include "runtime/buffer.h"
#include "runtime/profile.h"

namespace qnnpy {

struct OpArgs {
  const Graph& graph;
  const Node& node;
  std::vector<Buffer>& values;
  const KernelSet& k;
  Profile profile;
  int threads = 1;  // the workers the node may use (the Executor's thread count)
  bool input_dies = false;  // no later node reads input 0, nor is it a graph output: its buffer may be taken

  const Value& in(size_t i = 0) const { return graph.value(node.inputs.at(i)); }
  const Buffer& in_buf(size_t i = 0) const { return values[node.inputs.at(i)]; }
  const Value& out() const { return graph.value(node.output); }
  Buffer& out_buf() const { return values[node.output]; }
  bool is_signed(size_t i = 0) const { return in(i).dtype == DType::Int8; }
  int64_t out_count() const { return num_elements(out().shape); }
  [[noreturn]] void fail(const std::string& msg) const;
};

// Pool2dShape of a rank-4 node input and output, with a 1x1 window.
Pool2dShape pool_shape(const OpArgs& a);

}  // namespace qnnpy
