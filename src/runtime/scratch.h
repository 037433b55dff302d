// Per-thread scratch memory, reused across calls: grown when too small, never
// cleared (callers write before they read) and never shrunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qnnpy {

// The start of every scratch buffer is aligned to a cache line: the kernels load and store 32 or
// 64 bytes at a time, and with malloc's 16-byte alignment half of the 32-byte accesses to a GEMM's
// int32 results crossed a line (a large block from malloc starts 16 bytes past a page).
constexpr size_t kScratchAlign = 64;

// `Slot` tells apart buffers of the same type used at the same time.
template <class T, int Slot>
T* thread_scratch(size_t n) {
  static_assert(kScratchAlign % sizeof(T) == 0, "whole elements up to the aligned start");
  constexpr size_t pad = kScratchAlign / sizeof(T);
  thread_local std::vector<T> buffer;
  if (buffer.size() < n + pad) buffer.resize(n + pad);
  const uintptr_t start = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + ((kScratchAlign - start % kScratchAlign) % kScratchAlign) / sizeof(T);
}

}  // namespace qnnpy
