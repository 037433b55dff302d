// Nodes prepared from their spec tensors: decoded and weights packed once per spec
// tensor, found again on every later call with the same tensor.
#pragma once

#include <cstdint>
#include <memory>

#include <tvm/ffi/container/tensor.h>

#include "runtime/node_runner.h"
#include "tvm_kernels/node_spec.h"

namespace qnnpy {

struct PreparedNode {
  explicit PreparedNode(NodeSpec s) : spec(std::move(s)), runner(spec.graph, spec.node(), spec.profile) {}
  NodeSpec spec;
  NodeRunner runner;
};

// The node of `spec`, a 1-D uint8 tensor holding a node spec. The cache is keyed by
// the tensor object and keeps a reference to it, so a key cannot be reused by another
// tensor while its entry lives; entries whose tensor nobody else holds any more (the
// module that owned it was freed) are dropped when a new node is prepared.
std::shared_ptr<const PreparedNode> prepared_node(const tvm::ffi::Tensor& spec);

// How many nodes were prepared (decoded and packed) since the library was loaded.
int64_t prepared_node_count();
// How many prepared nodes the cache holds now.
int64_t cached_node_count();

}  // namespace qnnpy
