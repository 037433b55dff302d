// Per-thread scratch memory, reused across calls: grown when too small, never
// cleared (callers write before they read) and never shrunk.
#pragma once

#include <cstddef>
#include <vector>

namespace qnnpy {

// `Slot` tells apart buffers of the same type used at the same time.
template <class T, int Slot>
T* thread_scratch(size_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

}  // namespace qnnpy
