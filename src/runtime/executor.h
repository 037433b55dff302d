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

// Values a caller carries from one run to the next without copying them in and out (a decoder's KV cache): the
// first buffers.size() graph inputs read them, and outputs first_output, first_output + 1, ... write them back.
struct CarriedState {
  std::vector<Buffer> buffers;
  size_t first_output = 1;
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
  // With `carried`, its buffers are the first inputs (their pointers in `inputs` are not read) and take the
  // outputs that write them back (returned empty: no values, dtype and shape only); each must hold its input's
  // element count in the input's storage (float values, or integers widened to int64).
  std::vector<HostTensor> run(const std::vector<const void*>& inputs, std::map<std::string, HostTensor>* captured,
                              const std::map<int, HostTensor>* feed = nullptr, CarriedState* carried = nullptr);

  // Wall time of each node in the last finished run, in seconds (node order); a copy,
  // taken while no run writes it.
  std::vector<double> node_seconds() const;
  // The kernel each conv/linear node used in the last finished run ("" for other nodes).
  std::vector<std::string> node_kernels() const;

  // The bytes the values' storage keeps between runs (the pools' capacity; no run is in flight then).
  size_t storage_bytes();

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
  // Values' storage, kept from one run to the next and shared by values that are not alive at once: a value's
  // vector is taken from its kind's pool when its node runs and goes back when the last node that reads it has
  // run, so memory follows the largest set of values alive together, not their sum. The pools hand out the
  // best fit by capacity, so from the second run on the same vectors meet the same values: an op that writes
  // into the vector it is given allocates nothing (no page faults that no worker thread shares); one that
  // builds a new vector replaces it, as before pooling. 8-bit vectors keep their contents (every op writes all
  // of its output); float and index vectors are emptied (an op sees an empty vector, as in a first run, and
  // growing it reuses the memory).
  template <class T>
  struct Pool {
    std::vector<std::vector<T>> free;
    std::vector<T> take(size_t count);
    void give(std::vector<T>&& v);
    size_t bytes() const;
  };
  void take_storage(int value_id, Buffer& b);
  void give_storage(Buffer& b);
  Pool<uint8_t> q_pool_;
  Pool<float> f_pool_;
  Pool<int64_t> idx_pool_;
  std::vector<std::vector<int>> dying_;  // per node: the values no later node reads (their storage goes back)
  std::vector<double> node_seconds_;
  std::vector<std::string> node_kernels_;
};

}  // namespace qnnpy
