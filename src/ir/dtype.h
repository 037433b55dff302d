// Element types of the tensors qnnpy handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qnnpy {

// Int64 (and Int32) also type integer graph inputs (the indices of an embedding lookup) and the
// integer values of float ops; Bool types masks and comparisons (one byte per element in params).
enum class DType : uint8_t { Float32, UInt8, Int8, Int32, Int64, Bool };

std::size_t dtype_size(DType t);
// The Relax / numpy spelling: "float32", "uint8", "int8", "int32", "int64", "bool".
const char* dtype_name(DType t);
DType dtype_from_name(const std::string& name);
// int64 / int32: the dtypes of integer graph inputs (indices).
inline bool is_index_dtype(DType t) { return t == DType::Int64 || t == DType::Int32; }
// The dtypes of unquantized values other than float32: the runtime holds them widened to int64
// (Buffer::idx); bool as 0 / 1.
inline bool is_integer_storage(DType t) { return is_index_dtype(t) || t == DType::Bool; }
// The dtypes of values without quantization parameters: float32 and the integer-storage ones.
inline bool is_plain_dtype(DType t) { return t == DType::Float32 || is_integer_storage(t); }

// Representable range of an 8- or 32-bit integer dtype, as int32 (int64 and float32 throw).
int32_t dtype_min(DType t);
int32_t dtype_max(DType t);

}  // namespace qnnpy
