// Reading and writing 8-bit quantized values held as bytes.
#pragma once

#include <cstdint>

namespace qnnpy {

inline int32_t load_q(const uint8_t* p, int64_t i, bool is_signed) {
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(p[i])) : static_cast<int32_t>(p[i]);
}

inline void store_q(uint8_t* p, int64_t i, int32_t v) { p[i] = static_cast<uint8_t>(v); }

}  // namespace qnnpy
