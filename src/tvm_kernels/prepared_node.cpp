#include "tvm_kernels/prepared_node.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "ir/symbolic.h"

namespace qnnpy {
namespace {

struct CacheEntry {
  tvm::ffi::Tensor spec;  // held so that the key stays this tensor's
  std::shared_ptr<const SpecNode> node;
};

std::mutex cache_mutex;
std::unordered_map<const void*, CacheEntry> cache;
int64_t preparations = 0;

void check_spec_tensor(const tvm::ffi::Tensor& t) {
  const DLTensor* d = t.GetDLTensorPtr();
  if (d->ndim != 1 || d->dtype.code != kDLUInt || d->dtype.bits != 8 || d->dtype.lanes != 1 ||
      d->device.device_type != kDLCPU) {
    throw std::invalid_argument("qnnpy.kernels: argument 0 must be the node spec, a 1-D uint8 CPU tensor");
  }
}

}  // namespace

SpecNode::SpecNode(NodeSpec spec) : spec_(std::move(spec)) {
  if (!symbolic()) fixed_ = std::make_shared<const PreparedNode>(spec_.graph, spec_.profile, spec_.input_layouts);
}

std::shared_ptr<const PreparedNode> SpecNode::at(int64_t size, const std::vector<Shape>& input_shapes) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = sizes_.begin(); it != sizes_.end(); ++it) {
      if (it->first != size) continue;
      std::rotate(it, it + 1, sizes_.end());  // now the most recent
      return sizes_.back().second;
    }
  }
  auto node = std::make_shared<const PreparedNode>(at_size(spec_.graph, size, input_shapes), spec_.profile,
                                                   spec_.input_layouts);
  std::lock_guard<std::mutex> lock(mutex_);
  if (sizes_.size() == kSizes) sizes_.erase(sizes_.begin());
  sizes_.emplace_back(size, node);
  return node;
}

std::shared_ptr<const SpecNode> spec_node(const tvm::ffi::Tensor& spec) {
  const void* key = spec.GetDLTensorPtr();  // inside the tensor object: one per object
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto found = cache.find(key);
    if (found != cache.end()) return found->second.node;
  }
  check_spec_tensor(spec);
  const DLTensor* d = spec.GetDLTensorPtr();
  auto node = std::make_shared<const SpecNode>(
      decode_node_spec(static_cast<const uint8_t*>(d->data) + d->byte_offset, static_cast<size_t>(d->shape[0])));
  std::lock_guard<std::mutex> lock(cache_mutex);
  for (auto it = cache.begin(); it != cache.end();) {
    it = it->second.spec.use_count() == 1 ? cache.erase(it) : std::next(it);
  }
  auto [entry, inserted] = cache.emplace(key, CacheEntry{spec, node});  // another thread may have come first
  if (inserted) ++preparations;
  return entry->second.node;
}

int64_t prepared_node_count() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return preparations;
}

int64_t cached_node_count() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return static_cast<int64_t>(cache.size());
}

}  // namespace qnnpy
