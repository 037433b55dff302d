#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "runtime/integer_values.h"
#include "runtime/layout.h"
#include "runtime/parallel.h"

namespace qnnpy {

Executor::Executor(std::shared_ptr<const Graph> graph, Profile profile, Isa isa, int threads)
    : graph_(std::move(graph)), profile_(profile), isa_(isa), k_(kernel_set(isa)), threads_(threads) {
  if (!graph_) throw std::invalid_argument("runtime: no graph given");
  if (threads < 1 || threads > kMaxThreads) {
    throw std::invalid_argument("runtime: threads must be in [1, " + std::to_string(kMaxThreads) + "], got " +
                                std::to_string(threads));
  }
  graph_->freeze();
  // The last node reading each value (graph outputs: read after every node).
  const auto& nodes = graph_->nodes();
  std::vector<size_t> last_reader(graph_->values().size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int v : nodes[i].inputs) last_reader[v] = i;
  for (int v : graph_->outputs()) last_reader[v] = nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const bool input_dies = !nodes[i].inputs.empty() && last_reader[nodes[i].inputs[0]] == i;
    runners_.emplace_back(*graph_, nodes[i], profile_, input_dies);
  }
}

std::vector<double> Executor::node_seconds() const {
  std::lock_guard<std::mutex> lock(record_mutex_);
  return node_seconds_;
}

std::vector<std::string> Executor::node_kernels() const {
  std::lock_guard<std::mutex> lock(record_mutex_);
  return node_kernels_;
}

HostTensor Executor::to_host(int value_id, const Buffer& b) const {
  const Value& v = graph_->value(value_id);
  HostTensor t;
  t.dtype = v.dtype;
  t.shape = v.shape;
  if (v.dtype == DType::Float32) {
    t.bytes.resize(b.f.size() * sizeof(float));
    std::memcpy(t.bytes.data(), b.f.data(), t.bytes.size());
  } else if (is_integer_storage(v.dtype)) {
    t.bytes = narrow_integers(b.idx, v.dtype);
  } else {
    t.bytes = to_logical(b.q, v.shape);
  }
  return t;
}

void Executor::from_host(int value_id, const HostTensor& t, Buffer& b) const {
  const Value& v = graph_->value(value_id);
  if (t.dtype != v.dtype || t.shape != v.shape ||
      t.bytes.size() != static_cast<size_t>(num_elements(v.shape)) * dtype_size(v.dtype)) {
    throw std::invalid_argument("runtime: value '" + v.name + "' is " + dtype_name(v.dtype) + " " + shape_str(v.shape) +
                                ", fed " + dtype_name(t.dtype) + " " + shape_str(t.shape));
  }
  if (v.dtype == DType::Float32) {
    b.f.resize(t.bytes.size() / sizeof(float));
    std::memcpy(b.f.data(), t.bytes.data(), t.bytes.size());
  } else if (is_integer_storage(v.dtype)) {
    b.idx = widen_integers(t.bytes.data(), static_cast<size_t>(num_elements(v.shape)), v.dtype);
  } else {
    b.q = to_storage(t.bytes, v.shape);
  }
}

std::vector<HostTensor> Executor::run(const std::vector<const void*>& inputs,
                                      std::map<std::string, HostTensor>* captured, const std::map<int, HostTensor>* feed) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  wake_workers(threads_);  // while the inputs are copied and the first nodes run
  const Graph& g = *graph_;
  if (inputs.size() != g.inputs().size()) {
    throw std::invalid_argument("runtime: " + std::to_string(g.inputs().size()) + " input(s) expected, got " +
                                std::to_string(inputs.size()));
  }
  std::vector<Buffer> values(g.values().size());
  storage_.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i].q = std::move(storage_[i].q);
    values[i].f = std::move(storage_[i].f);
    values[i].idx = std::move(storage_[i].idx);
    values[i].f.clear();
    values[i].idx.clear();
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    Buffer& b = values[g.inputs()[i]];
    const int64_t count = num_elements(v.shape);
    if (is_integer_storage(v.dtype)) {
      b.idx = widen_integers(inputs[i], static_cast<size_t>(count), v.dtype);
    } else {
      b.f.assign(static_cast<const float*>(inputs[i]), static_cast<const float*>(inputs[i]) + count);
    }
  }
  const auto& nodes = g.nodes();
  std::vector<double> seconds(nodes.size(), 0.0);
  std::vector<std::string> kernels(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    kernels[i] = runners_[i].run(g, nodes[i], values, k_, threads_);
    seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (captured) (*captured)[g.value(nodes[i].output).name] = to_host(nodes[i].output, values[nodes[i].output]);
    if (feed && feed->count(nodes[i].output)) from_host(nodes[i].output, feed->at(nodes[i].output), values[nodes[i].output]);
  }
  std::vector<HostTensor> outs;
  for (int id : g.outputs()) outs.push_back(to_host(id, values[id]));
  for (size_t i = 0; i < values.size(); ++i) {
    storage_[i].q = std::move(values[i].q);
    storage_[i].f = std::move(values[i].f);
    storage_[i].idx = std::move(values[i].idx);
  }
  std::lock_guard<std::mutex> record_lock(record_mutex_);
  node_seconds_ = std::move(seconds);
  node_kernels_ = std::move(kernels);
  return outs;
}

}  // namespace qnnpy
