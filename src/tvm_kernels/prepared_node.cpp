#include "tvm_kernels/prepared_node.h"

#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace qnnpy {
namespace {

struct CacheEntry {
  tvm::ffi::Tensor spec;  // held so that the key stays this tensor's
  std::shared_ptr<const PreparedNode> node;
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

std::shared_ptr<const PreparedNode> prepared_node(const tvm::ffi::Tensor& spec) {
  const void* key = spec.GetDLTensorPtr();  // inside the tensor object: one per object
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto found = cache.find(key);
    if (found != cache.end()) return found->second.node;
  }
  check_spec_tensor(spec);
  const DLTensor* d = spec.GetDLTensorPtr();
  auto node = std::make_shared<const PreparedNode>(
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
