// Element types of the tensors qnnpy handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qnnpy {

enum class DType : uint8_t { Float32, UInt8, Int8, Int32 };

std::size_t dtype_size(DType t);
// The Relax / numpy spelling: "float32", "uint8", "int8", "int32".
const char* dtype_name(DType t);
DType dtype_from_name(const std::string& name);

// Representable range of an integer dtype, as int32.
int32_t dtype_min(DType t);
int32_t dtype_max(DType t);

}  // namespace qnnpy
