// The runtime holds int64, int32 and bool values widened to int64 (Buffer::idx); these convert
// them from and to their own element type (bool: one byte, 0 or 1).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "ir/dtype.h"

namespace qnnpy {

// `count` elements of `dtype` (int64, int32 or bool) at `data`, widened.
inline std::vector<int64_t> widen_integers(const void* data, size_t count, DType dtype) {
  std::vector<int64_t> out(count);
  if (dtype == DType::Int64) {
    std::memcpy(out.data(), data, count * sizeof(int64_t));
  } else if (dtype == DType::Int32) {
    const int32_t* p = static_cast<const int32_t*>(data);
    for (size_t i = 0; i < count; ++i) out[i] = p[i];
  } else {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < count; ++i) out[i] = p[i] != 0;
  }
  return out;
}

// Writes `values` as `dtype` elements to `data` (int64, int32 or bool).
inline void write_integers(const std::vector<int64_t>& values, DType dtype, void* data) {
  if (dtype == DType::Int64) {
    std::memcpy(data, values.data(), values.size() * sizeof(int64_t));
  } else if (dtype == DType::Int32) {
    int32_t* p = static_cast<int32_t*>(data);
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<int32_t>(values[i]);
  } else {
    uint8_t* p = static_cast<uint8_t*>(data);
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i] != 0;
  }
}

// `values` as the bytes of `dtype` elements.
inline std::vector<uint8_t> narrow_integers(const std::vector<int64_t>& values, DType dtype) {
  std::vector<uint8_t> bytes(values.size() * dtype_size(dtype));
  write_integers(values, dtype, bytes.data());
  return bytes;
}

}  // namespace qnnpy
