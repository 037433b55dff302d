// Conversions between NCHW (logical, PyTorch) and NHWC (the runtime's storage) orders.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace qnnpy {

template <class T>
std::vector<T> nchw_to_nhwc(const T* src, const Shape& s) {
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  std::vector<T> dst(static_cast<size_t>(n * c * hw));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) dst[(b * hw + p) * c + ch] = src[(b * c + ch) * hw + p];
  return dst;
}

template <class T>
std::vector<T> nhwc_to_nchw(const T* src, const Shape& s) {
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  std::vector<T> dst(static_cast<size_t>(n * c * hw));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) dst[(b * c + ch) * hw + p] = src[(b * hw + p) * c + ch];
  return dst;
}

// A stored tensor's values in logical order (only rank-4 tensors are stored NHWC).
inline std::vector<uint8_t> to_logical(const std::vector<uint8_t>& stored, const Shape& s) {
  return s.size() == 4 ? nhwc_to_nchw(stored.data(), s) : stored;
}

// Logical values in the runtime's storage order.
inline std::vector<uint8_t> to_storage(std::vector<uint8_t> logical, const Shape& s) {
  return s.size() == 4 ? nchw_to_nhwc(logical.data(), s) : logical;
}

}  // namespace qnnpy
