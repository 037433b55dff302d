#include "runtime/packed_weights.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "ops/op_def.h"

namespace qnnpy {
namespace {

using WeakBytes = std::weak_ptr<const std::vector<uint8_t>>;

struct Entry {
  std::string kind;
  std::vector<WeakBytes> buffers;
  std::vector<int64_t> attributes;
  std::weak_ptr<const void> data;
  int64_t bytes = 0;
};

// By owner: an entry whose buffer was released keeps its packed data (what runners still read) and never matches
// a buffer made since, which has another owner.
bool same_buffer(const WeakBytes& a, const std::shared_ptr<const std::vector<uint8_t>>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

bool matches(const Entry& e, const PackingKey& key) {
  if (e.kind != key.kind || e.attributes != key.attributes || e.buffers.size() != key.params.size()) return false;
  for (size_t i = 0; i < e.buffers.size(); ++i) {
    if (!same_buffer(e.buffers[i], key.params[i]->bytes.buffer())) return false;
  }
  return true;
}

std::mutex cache_mutex;
std::vector<Entry>& cache() {
  static std::vector<Entry> entries;
  return entries;
}

// The live data of an entry matching `key`, or null; drops the entries whose data is gone (under cache_mutex).
std::shared_ptr<const void> find(const PackingKey& key) {
  std::vector<Entry>& entries = cache();
  std::shared_ptr<const void> found;
  for (size_t i = 0; i < entries.size();) {
    if (entries[i].data.expired()) {
      entries[i] = std::move(entries.back());
      entries.pop_back();
      continue;
    }
    if (!found && matches(entries[i], key)) found = entries[i].data.lock();
    ++i;
  }
  return found;
}

}  // namespace

std::shared_ptr<const void> shared_packing(const PackingKey& key, const std::function<std::shared_ptr<const void>()>& make,
                                           const std::function<int64_t(const void*)>& bytes) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (auto found = find(key)) return found;
  }
  std::shared_ptr<const void> made = make();  // outside the lock: packing a large weight takes a while
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (auto found = find(key)) return found;  // another thread packed the same meanwhile
  Entry e{key.kind, {}, key.attributes, made, bytes(made.get())};
  for (const Param* p : key.params) e.buffers.push_back(p->bytes.buffer());
  cache().push_back(std::move(e));
  return made;
}

WeightBytes held_weight_bytes(const std::vector<const Graph*>& graphs) {
  WeightBytes held;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    for (const Entry& e : cache()) {
      if (!e.data.expired()) held.packed += e.bytes;
    }
  }
  std::set<const void*> seen;
  for (const Graph* g : graphs) {
    for (const Param& p : g->params()) {
      if (!p.bytes.released() && seen.insert(p.bytes.buffer().get()).second) held.params += static_cast<int64_t>(p.bytes.size());
    }
  }
  return held;
}

int64_t release_packed_params(Graph& g, const std::string& why) {
  // Per param: whether every reader copies it at preparation, and whether it has a reader at all.
  std::vector<bool> copied(g.params().size(), true), read(g.params().size(), false);
  for (const Node& n : g.nodes()) {
    const OpDef& def = op_def(n);
    const std::vector<std::string> packed = def.packed_param_roles ? def.packed_param_roles(n) : std::vector<std::string>{};
    for (const auto& [role, id] : n.params) {
      read[id] = true;
      if (std::find(packed.begin(), packed.end(), role) == packed.end()) copied[id] = false;
    }
  }
  int64_t bytes = 0;
  for (size_t id = 0; id < g.params().size(); ++id) {
    const Param& p = g.params()[id];
    if (!read[id] || !copied[id] || p.bytes.released()) continue;
    const int64_t size = static_cast<int64_t>(p.bytes.size());
    if (g.release_param(static_cast<int>(id), why)) bytes += size;
  }
  return bytes;
}

}  // namespace qnnpy
