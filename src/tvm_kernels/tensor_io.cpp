#include "tvm_kernels/tensor_io.h"

#include <cstring>
#include <stdexcept>

#include "runtime/integer_values.h"
#include "tvm_kernels/graph_split.h"

namespace qnnpy {

DLDataType dl_dtype(DType t) {
  switch (t) {
    case DType::Float32: return {kDLFloat, 32, 1};
    case DType::UInt8: return {kDLUInt, 8, 1};
    case DType::Int8: return {kDLInt, 8, 1};
    case DType::Int32: return {kDLInt, 32, 1};
    case DType::Int64: return {kDLInt, 64, 1};
    case DType::Bool: return {kDLBool, 8, 1};
  }
  return {kDLOpaqueHandle, 0, 0};
}

namespace {

bool compact(const DLTensor* t) {
  if (!t->strides) return true;
  int64_t expected = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->strides[i] != expected) return false;
    expected *= t->shape[i];
  }
  return true;
}

// The tensor's bytes, after checking it against the value.
uint8_t* checked_data(const DLTensor* t, const Value& v) {
  const Shape expected = storage_shape(v);
  const Shape got(t->shape, t->shape + t->ndim);
  const DLDataType want = dl_dtype(v.dtype);
  if (t->dtype.code != want.code || t->dtype.bits != want.bits || t->dtype.lanes != want.lanes) {
    throw std::invalid_argument("'" + v.name + "' must be " + dtype_name(v.dtype) + ", got dtype code " +
                                std::to_string(t->dtype.code) + " with " + std::to_string(t->dtype.bits) + " bits");
  }
  if (got != expected) {
    throw std::invalid_argument("'" + v.name + "' must have shape " + shape_str(expected) + ", got " +
                                shape_str(got));
  }
  if (t->device.device_type != kDLCPU) throw std::invalid_argument("'" + v.name + "' must be on the CPU");
  if (!compact(t)) throw std::invalid_argument("'" + v.name + "' must be compact row-major");
  return static_cast<uint8_t*>(t->data) + t->byte_offset;
}

}  // namespace

void read_tensor(const DLTensor* t, const Value& v, Buffer& b) {
  const uint8_t* data = checked_data(t, v);
  const size_t count = static_cast<size_t>(num_elements(v.shape));
  if (v.dtype == DType::Float32) {
    const float* f = reinterpret_cast<const float*>(data);
    b.f.assign(f, f + count);
  } else if (is_integer_storage(v.dtype)) {
    b.idx = widen_integers(data, count, v.dtype);
  } else {
    b.q.assign(data, data + count * dtype_size(v.dtype));
  }
}

void write_tensor(const Buffer& b, const Value& v, DLTensor* t) {
  uint8_t* data = checked_data(t, v);
  const size_t bytes = static_cast<size_t>(num_elements(v.shape)) * dtype_size(v.dtype);
  const size_t have = v.dtype == DType::Float32       ? b.f.size() * sizeof(float)
                      : is_integer_storage(v.dtype) ? b.idx.size() * dtype_size(v.dtype)
                                                    : b.q.size();
  if (have != bytes) throw std::logic_error("'" + v.name + "': the kernel wrote " + std::to_string(have) +
                                            " bytes, " + std::to_string(bytes) + " expected");
  if (is_integer_storage(v.dtype)) return write_integers(b.idx, v.dtype, data);
  std::memcpy(data, v.dtype == DType::Float32 ? static_cast<const void*>(b.f.data()) : b.q.data(), bytes);
}

}  // namespace qnnpy
