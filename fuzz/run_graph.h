// Runs a fuzzed graph in the integer runtime when its size allows, on the scalar
// kernels and on one of the SIMD kernel sets this CPU runs, and checks that both
// give the same bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
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

// One graph input's values, in its dtype.
struct GraphInput {
  std::vector<float> f;
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;
  const void* data() const {
    if (!i64.empty()) return i64.data();
    if (!i32.empty()) return i32.data();
    return f.data();
  }
};

// Deterministic inputs, the same for every ISA: floats in [-4, 4); indices in [-1, 15), mostly
// inside small tables, sometimes outside (which the runtime refuses).
inline std::vector<GraphInput> make_inputs(const Graph& g) {
  std::vector<GraphInput> inputs;
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  for (int id : g.inputs()) {
    const Value& v = g.value(id);
    const size_t count = static_cast<size_t>(bounded_elements(v.shape, kMaxWork));
    GraphInput x;
    if (v.dtype == DType::Int64) {
      for (size_t i = 0; i < count; ++i) x.i64.push_back(static_cast<int64_t>(next() % 16) - 1);
    } else if (v.dtype == DType::Int32) {
      for (size_t i = 0; i < count; ++i) x.i32.push_back(static_cast<int32_t>(next() % 16) - 1);
    } else {
      for (size_t i = 0; i < count; ++i) x.f.push_back(static_cast<float>(next()) / static_cast<float>(1 << 24) * 8.0f - 4.0f);
    }
    inputs.push_back(std::move(x));
  }
  return inputs;
}

inline std::vector<HostTensor> run_once(const std::shared_ptr<const Graph>& g, Profile profile, Isa isa,
                                        const std::vector<GraphInput>& inputs) {
  Executor executor(g, profile, isa, 1);
  std::vector<const void*> ptrs;
  for (const auto& x : inputs) ptrs.push_back(x.data());
  return executor.run(ptrs, nullptr);
}

// `selector` picks the profile and the SIMD set (any number; the targets pass something the input decides).
inline void run_on_scalar_and_simd(const char* target, const std::shared_ptr<const Graph>& g, size_t selector) {
  if (bounded_work(*g) < 0) return;
  const Profile profiles[] = {Profile::Int32Bias, Profile::Fbgemm, Profile::FixedPoint};
  const Profile profile = profiles[selector % 3];
  const std::vector<GraphInput> inputs = make_inputs(*g);
  const std::vector<HostTensor> scalar = run_once(g, profile, Isa::Scalar, inputs);
  static const std::vector<Isa> isas = runnable_simd_isas();
  if (isas.empty()) return;
  const Isa isa = isas[selector / 3 % isas.size()];
  const std::vector<HostTensor> simd = run_once(g, profile, isa, inputs);
  const std::string name = isa_name(isa);
  if (scalar.size() != simd.size()) finding(target, ("scalar and " + name + " runs return different output counts").c_str());
  for (size_t i = 0; i < scalar.size(); ++i) {
    if (scalar[i].bytes != simd[i].bytes) finding(target, ("scalar and " + name + " outputs differ").c_str());
  }
}

}  // namespace qnnpy::fuzz
