#include "ir/dtype.h"

#include <stdexcept>

namespace qnnpy {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::UInt8: return 1;
    case DType::Int8: return 1;
    case DType::Bool: return 1;
  }
  throw std::logic_error("unknown dtype");
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Bool: return "bool";
  }
  throw std::logic_error("unknown dtype");
}

DType dtype_from_name(const std::string& name) {
  if (name == "float32") return DType::Float32;
  if (name == "int32") return DType::Int32;
  if (name == "uint8") return DType::UInt8;
  if (name == "int8") return DType::Int8;
  if (name == "int64") return DType::Int64;
  if (name == "bool") return DType::Bool;
  throw std::invalid_argument("unsupported dtype '" + name + "' (expected float32, int32, int64, uint8, int8 or bool)");
}

int32_t dtype_min(DType t) {
  switch (t) {
    case DType::UInt8: return 0;
    case DType::Int8: return -128;
    case DType::Int32: return INT32_MIN;
    case DType::Int64:
    case DType::Bool:
    case DType::Float32: break;
  }
  throw std::invalid_argument(std::string("dtype_min: ") + dtype_name(t) + " has no int32 range");
}

int32_t dtype_max(DType t) {
  switch (t) {
    case DType::UInt8: return 255;
    case DType::Int8: return 127;
    case DType::Int32: return INT32_MAX;
    case DType::Int64:
    case DType::Bool:
    case DType::Float32: break;
  }
  throw std::invalid_argument(std::string("dtype_max: ") + dtype_name(t) + " has no int32 range");
}

}  // namespace qnnpy
