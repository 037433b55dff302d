// Data a runtime op derives from graph params once (a weight packed for a GEMM), shared by every runner prepared on
// the same param buffers: a decoder's step and prefill modules, whose graphs share their params
// (Graph::share_params), pack each weight once between them. And the release of the params such runners copied.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace qnnpy {

// What the packed data is made from: a kind (the op and the layout), the params' buffers and whatever else it
// depends on (attributes, as integers).
struct PackingKey {
  std::string kind;
  std::vector<const Param*> params;
  std::vector<int64_t> attributes;
};

// The data made by `make` for `key`, or the live data an earlier call made for an equal key (same kind, attributes
// and param buffers: the same buffers, not equal values). The cache holds it weakly: it lives while a runner does.
// `bytes` gives the size of what `make` made.
std::shared_ptr<const void> shared_packing(const PackingKey& key, const std::function<std::shared_ptr<const void>()>& make,
                                           const std::function<int64_t(const void*)>& bytes);

// T has `int64_t bytes() const`: the memory it holds.
template <class T>
std::shared_ptr<const T> shared_packing(const PackingKey& key, const std::function<std::shared_ptr<const T>()>& make) {
  return std::static_pointer_cast<const T>(shared_packing(key, std::function<std::shared_ptr<const void>()>(make),
                                                          [](const void* t) { return static_cast<const T*>(t)->bytes(); }));
}

// The bytes of the packed data alive now (every runner's, counted once) and of the param buffers `graphs` hold
// (each buffer once however many of them share it): what the weights take in memory.
struct WeightBytes {
  int64_t params = 0, packed = 0;
};
WeightBytes held_weight_bytes(const std::vector<const Graph*>& graphs);

// Releases (Graph::release_param) every param that only runners which copied it at preparation read: each node
// reading it names its role in its op's packed_param_roles (ops/op_def.h). Executors made before keep working;
// one made afterwards, the TVM forms and saving the graph throw, naming `why`. Returns the bytes freed: of the
// buffers no other graph (or NumPy view) still holds.
int64_t release_packed_params(Graph& g, const std::string& why);

}  // namespace qnnpy
