// Runs a graph in integer arithmetic with the kernels of one ISA under one profile.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernels.h"
#include "runtime/buffer.h"
#include "runtime/node_runner.h"
#include "runtime/profile.h"

namespace qnnpy {

// A tensor produced by a run: float32 (inputs, dequantized outputs) or 8-bit
// values, always in logical (NCHW) order.
struct HostTensor {
  DType dtype = DType::Float32;
  Shape shape;
  std::vector<uint8_t> bytes;
};

class Executor {
 public:
  // Makes every node's runner once (weights packed, tables built), each from its
  // op's definition (src/ops). `threads` workers split conv and linear rows
  // and large add and max_pool2d nodes.
  // The graph must not be null; it is frozen (Graph::freeze), since the runners keep
  // references into it. `threads` must be in [1, kMaxThreads].
  Executor(std::shared_ptr<const Graph> graph, Profile profile, Isa isa, int threads);

  static constexpr int kMaxThreads = 256;

  // `inputs` are buffers in graph-input order, each holding the input's element count
  // in the input's dtype (float32 NCHW, or int64 / int32 indices); callers check the
  // shapes and dtypes. With `capture`, every node output is returned by value name in `captured`.
  // With `feed` (value id -> values in logical order, of the value's dtype and shape), a fed
  // node's output is replaced by the given values after it is computed (and captured), so the
  // nodes that read it compute from those values: qnnpy.compare feeds PyTorch's own tensors this
  // way to measure each layer's arithmetic alone.
  std::vector<HostTensor> run(const std::vector<const void*>& inputs, std::map<std::string, HostTensor>* captured,
                              const std::map<int, HostTensor>* feed = nullptr);

  // Wall time of each node in the last finished run, in seconds (node order); a copy,
  // taken while no run writes it.
  std::vector<double> node_seconds() const;
  // The kernel each conv/linear node used in the last finished run ("" for other nodes).
  std::vector<std::string> node_kernels() const;

  const Graph& graph() const { return *graph_; }
  Profile profile() const { return profile_; }
  Isa isa() const { return isa_; }

 private:
  HostTensor to_host(int value_id, const Buffer& b) const;
  void from_host(int value_id, const HostTensor& t, Buffer& b) const;

  std::shared_ptr<const Graph> graph_;
  Profile profile_;
  Isa isa_;
  const KernelSet& k_;
  int threads_;
  std::vector<NodeRunner> runners_;  // node order
  std::mutex run_mutex_;  // one run at a time per executor: runs share the runners' scratch state and the storage
  mutable std::mutex record_mutex_;  // guards the timing records of the last finished run
  // The storage of every value, kept from one run to the next. The 8-bit values as they are: a run then
  // neither allocates nor zero-fills them (page faults and memsets that no worker thread shares); every
  // op writes all of its output. The float and index vectors emptied but with their memory: an op sees
  // an empty vector, as in a first run, and growing it reuses the pages.
  struct KeptStorage {
    std::vector<uint8_t> q;
    std::vector<float> f;
    std::vector<int64_t> idx;
  };
  std::vector<KeptStorage> storage_;
  std::vector<double> node_seconds_;
  std::vector<std::string> node_kernels_;
};

}  // namespace qnnpy
