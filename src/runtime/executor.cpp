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
  // A node's output that nothing reads dies with the node; graph inputs and outputs live through the run.
  dying_.resize(nodes.size());
  std::vector<bool> is_input(graph_->values().size(), false);
  for (int v : graph_->inputs()) is_input[v] = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int out = nodes[i].output;
    if (last_reader[out] < i) last_reader[out] = i;
  }
  for (size_t v = 0; v < last_reader.size(); ++v) {
    if (!is_input[v] && last_reader[v] < nodes.size()) dying_[last_reader[v]].push_back(static_cast<int>(v));
  }
}

template <class T>
std::vector<T> Executor::Pool<T>::take(size_t count) {
  if (free.empty()) return {};
  // The smallest vector that holds `count`, else the largest (it grows once).
  size_t best = 0;
  for (size_t i = 1; i < free.size(); ++i) {
    const size_t c = free[i].capacity(), b = free[best].capacity();
    if (b >= count ? (c >= count && c < b) : c > b) best = i;
  }
  std::vector<T> v = std::move(free[best]);
  free[best] = std::move(free.back());
  free.pop_back();
  return v;
}

template <class T>
void Executor::Pool<T>::give(std::vector<T>&& v) {
  if (v.capacity() > 0) free.push_back(std::move(v));
  v = {};
}

template <class T>
size_t Executor::Pool<T>::bytes() const {
  size_t total = 0;
  for (const std::vector<T>& v : free) total += v.capacity() * sizeof(T);
  return total;
}

size_t Executor::storage_bytes() {
  std::lock_guard<std::mutex> lock(run_mutex_);
  return q_pool_.bytes() + f_pool_.bytes() + idx_pool_.bytes();
}

void Executor::take_storage(int value_id, Buffer& b) {
  const Value& v = graph_->value(value_id);
  const size_t count = static_cast<size_t>(num_elements(v.shape));
  if (v.dtype == DType::Float32) {
    b.f = f_pool_.take(count);
    b.f.clear();
  } else if (is_integer_storage(v.dtype)) {
    b.idx = idx_pool_.take(count);
    b.idx.clear();
  } else {
    b.q = q_pool_.take(count);
  }
}

void Executor::give_storage(Buffer& b) {
  q_pool_.give(std::move(b.q));
  f_pool_.give(std::move(b.f));
  idx_pool_.give(std::move(b.idx));
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
                                      std::map<std::string, HostTensor>* captured, const std::map<int, HostTensor>* feed,
                                      CarriedState* carried) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  wake_workers(threads_);  // while the inputs are copied and the first nodes run
  const Graph& g = *graph_;
  if (inputs.size() != g.inputs().size()) {
    throw std::invalid_argument("runtime: " + std::to_string(g.inputs().size()) + " input(s) expected, got " +
                                std::to_string(inputs.size()));
  }
  const size_t held = carried ? carried->buffers.size() : 0;
  if (carried && (held > inputs.size() || carried->first_output + held > g.outputs().size())) {
    throw std::invalid_argument("runtime: " + std::to_string(held) + " carried values for " + std::to_string(inputs.size()) +
                                " inputs and " + std::to_string(g.outputs().size()) + " outputs from output " +
                                std::to_string(carried->first_output));
  }
  for (size_t i = 0; i < held; ++i) {
    const Value& v = g.value(g.inputs()[i]);
    const Buffer& b = carried->buffers[i];
    const size_t count = static_cast<size_t>(num_elements(v.shape));
    const size_t stored = v.dtype == DType::Float32 ? b.f.size() : is_integer_storage(v.dtype) ? b.idx.size() : 0;
    if (stored != count) {
      throw std::invalid_argument("runtime: the carried value of input '" + v.name + "' holds " + std::to_string(stored) +
                                  " values of its kind; the input takes " + std::to_string(count) + " (" +
                                  dtype_name(v.dtype) + " " + shape_str(v.shape) + ")");
    }
  }
  std::vector<Buffer> values(g.values().size());
  for (size_t i = 0; i < held; ++i) values[g.inputs()[i]] = std::move(carried->buffers[i]);
  for (size_t i = held; i < inputs.size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    Buffer& b = values[g.inputs()[i]];
    take_storage(g.inputs()[i], b);
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
    take_storage(nodes[i].output, values[nodes[i].output]);
    kernels[i] = runners_[i].run(g, nodes[i], values, k_, threads_);
    seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (captured) (*captured)[g.value(nodes[i].output).name] = to_host(nodes[i].output, values[nodes[i].output]);
    if (feed && feed->count(nodes[i].output)) from_host(nodes[i].output, feed->at(nodes[i].output), values[nodes[i].output]);
    for (int v : dying_[i]) give_storage(values[v]);
  }
  std::vector<HostTensor> outs;
  std::vector<int> written_back(held, -1);  // the value id each carried buffer takes
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    const int id = g.outputs()[k];
    const bool carried_out = k >= (carried ? carried->first_output : 0) && k - (carried ? carried->first_output : 0) < held;
    if (carried_out) {
      written_back[k - carried->first_output] = id;
      outs.push_back(HostTensor{g.value(id).dtype, g.value(id).shape, {}});
    } else {
      outs.push_back(to_host(id, values[id]));
    }
  }
  // Moved, not copied; a value that several carried outputs return is copied for all but the last.
  for (size_t i = 0; i < held; ++i) {
    const int id = written_back[i];
    const bool again = std::find(written_back.begin() + static_cast<std::ptrdiff_t>(i) + 1, written_back.end(), id) != written_back.end();
    if (again) {
      carried->buffers[i] = values[id];
    } else {
      carried->buffers[i] = std::move(values[id]);
    }
  }
  for (Buffer& b : values) give_storage(b);
  std::lock_guard<std::mutex> record_lock(record_mutex_);
  node_seconds_ = std::move(seconds);
  node_kernels_ = std::move(kernels);
  return outs;
}

}  // namespace qnnpy
