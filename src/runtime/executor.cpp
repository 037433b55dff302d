#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "runtime/conv_runner.h"
#include "runtime/layout.h"

namespace qnnpy {

Executor::Executor(std::shared_ptr<const Graph> graph, Profile profile, Isa isa, int threads)
    : graph_(std::move(graph)), profile_(profile), isa_(isa), k_(kernel_set(isa)), threads_(std::max(1, threads)) {
  const auto& nodes = graph_->nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].op == "conv2d" || nodes[i].op == "linear") {
      layers_.emplace(i, prepare_layer(*graph_, nodes[i], profile_));
    } else if (nodes[i].op == "conv_transpose2d") {
      transposed_.emplace(std::piecewise_construct, std::forward_as_tuple(i),
                          std::forward_as_tuple(*graph_, nodes[i], profile_));
    } else if (!find_op_runner(nodes[i].op)) {
      throw std::invalid_argument("runtime: no kernel for op '" + nodes[i].op + "' (" + nodes[i].source + ")");
    }
  }
}

void Executor::run_node(const Node& n, std::vector<Buffer>& values, int64_t index) {
  const OpArgs args{*graph_, n, values, k_, profile_};
  auto layer = layers_.find(index);
  auto transposed = transposed_.find(index);
  if (layer != layers_.end()) {
    node_kernels_[index] = run_weighted(args, layer->second, threads_);
  } else if (transposed != transposed_.end()) {
    node_kernels_[index] = transposed->second.run(args, threads_);
  } else {
    (*find_op_runner(n.op))(args);
  }
}

HostTensor Executor::to_host(int value_id, const Buffer& b) const {
  const Value& v = graph_->value(value_id);
  HostTensor t;
  t.dtype = v.dtype;
  t.shape = v.shape;
  if (v.dtype == DType::Float32) {
    t.bytes.resize(b.f.size() * sizeof(float));
    std::memcpy(t.bytes.data(), b.f.data(), t.bytes.size());
  } else {
    t.bytes = to_logical(b.q, v.shape);
  }
  return t;
}

std::vector<HostTensor> Executor::run(const std::vector<const float*>& inputs,
                                      std::map<std::string, HostTensor>* captured) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  const Graph& g = *graph_;
  if (inputs.size() != g.inputs().size()) {
    throw std::invalid_argument("runtime: " + std::to_string(g.inputs().size()) + " input(s) expected, got " +
                                std::to_string(inputs.size()));
  }
  std::vector<Buffer> values(g.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    values[g.inputs()[i]].f.assign(inputs[i], inputs[i] + num_elements(v.shape));
  }
  const auto& nodes = g.nodes();
  node_seconds_.assign(nodes.size(), 0.0);
  node_kernels_.assign(nodes.size(), std::string());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    run_node(nodes[i], values, static_cast<int64_t>(i));
    node_seconds_[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (captured) (*captured)[g.value(nodes[i].output).name] = to_host(nodes[i].output, values[nodes[i].output]);
  }
  std::vector<HostTensor> outs;
  for (int id : g.outputs()) outs.push_back(to_host(id, values[id]));
  return outs;
}

}  // namespace qnnpy
