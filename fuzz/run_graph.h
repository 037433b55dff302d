// Runs a fuzzed graph in the integer runtime when its size allows, on the scalar
// kernels and, where the CPU has AVX2, on the AVX2 twins, and checks that both
// give the same bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "fuzz_contract.h"
#include "runtime/executor.h"

namespace qnnpy::fuzz {

// The runtime runs a graph only up to this much work (output elements times
// reduction length, summed over nodes), so one input costs about a millisecond.
constexpr int64_t kMaxWork = int64_t{1} << 22;

// Product of a shape's dims, or -1 when a dim is negative or the product exceeds `limit`.
inline int64_t bounded_elements(const Shape& shape, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > limit / d)) return -1;
    n *= d;
  }
  return n;
}

// A rough bound on the runtime's work for the graph; -1 when it is too much to run.
inline int64_t bounded_work(const Graph& g) {
  for (const Value& v : g.values()) {
    if (bounded_elements(v.shape, kMaxWork) < 0) return -1;
  }
  int64_t work = 0;
  for (const Node& n : g.nodes()) {
    const int64_t out = bounded_elements(g.value(n.output).shape, kMaxWork);
    int64_t reduction = 1;
    for (const auto& role : n.params) {
      const Param& p = g.param(role.second);
      const int64_t elems = bounded_elements(p.shape, kMaxWork);
      if (elems < 0) return -1;
      if (!p.shape.empty() && p.shape[0] > 0) reduction = std::max(reduction, elems / p.shape[0]);
    }
    if (out > 0 && reduction > kMaxWork / out) return -1;
    work += out * reduction;
    if (work > kMaxWork) return -1;
  }
  return work;
}

// Deterministic inputs in [-4, 4), the same for every ISA.
inline std::vector<std::vector<float>> make_inputs(const Graph& g) {
  std::vector<std::vector<float>> inputs;
  uint32_t state = 12345;
  for (int id : g.inputs()) {
    std::vector<float> x(static_cast<size_t>(bounded_elements(g.value(id).shape, kMaxWork)));
    for (float& f : x) {
      state = state * 1664525u + 1013904223u;
      f = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) * 8.0f - 4.0f;
    }
    inputs.push_back(std::move(x));
  }
  return inputs;
}

inline std::vector<HostTensor> run_once(const std::shared_ptr<const Graph>& g, Profile profile, Isa isa,
                                        const std::vector<std::vector<float>>& inputs) {
  Executor executor(g, profile, isa, 1);
  std::vector<const float*> ptrs;
  for (const auto& x : inputs) ptrs.push_back(x.data());
  return executor.run(ptrs, nullptr);
}

// `selector` picks the profile (any number; the targets pass something the input decides).
inline void run_on_both_isas(const char* target, const std::shared_ptr<const Graph>& g, size_t selector) {
  if (bounded_work(*g) < 0) return;
  const Profile profiles[] = {Profile::Int32Bias, Profile::Fbgemm, Profile::FixedPoint};
  const Profile profile = profiles[selector % 3];
  const std::vector<std::vector<float>> inputs = make_inputs(*g);
  const std::vector<HostTensor> scalar = run_once(g, profile, Isa::Scalar, inputs);
  if (!cpu_has_avx2()) return;
  const std::vector<HostTensor> avx2 = run_once(g, profile, Isa::Avx2, inputs);
  if (scalar.size() != avx2.size()) finding(target, "scalar and AVX2 runs return different output counts");
  for (size_t i = 0; i < scalar.size(); ++i) {
    if (scalar[i].bytes != avx2[i].bytes) finding(target, "scalar and AVX2 outputs differ");
  }
}

}  // namespace qnnpy::fuzz
