// Copies between caller tensors (DLTensor, CPU, compact row-major) and the runtime's
// value buffers, checking each tensor against the value it stands for.
#pragma once

#include <dlpack/dlpack.h>

#include "ir/graph.h"
#include "runtime/buffer.h"

namespace qnnpy {

// DLPack's data type of a dtype.
DLDataType dl_dtype(DType t);
// Fills `b` (f for float32 values, q otherwise) from `t`, which must have the value's
// dtype and storage shape (graph_split.h); std::invalid_argument names the value otherwise.
void read_tensor(const DLTensor* t, const Value& v, Buffer& b);
// Copies the value's buffer into `t`, checked the same way.
void write_tensor(const Buffer& b, const Value& v, DLTensor* t);

}  // namespace qnnpy
