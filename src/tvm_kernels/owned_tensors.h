// Tensors whose memory is a node's output storage (Buffer::q or Buffer::f), so that the kernels form
// passes activations from call to call without copies: qnnpy.kernels.call_node returns its output as
// such a tensor, and a later call that reads one takes its storage over as its input's Buffer for the
// time of the call (the runtime's Buffer holds its own vectors and cannot view TVM's memory, so the
// memory is made the library's). Other tensors (the module's inputs, a caller's) are copied.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <vector>

#include <tvm/ffi/container/tensor.h>

#include "ir/graph.h"
#include "runtime/buffer.h"

namespace qnnpy {

struct OwnedStorage;

// A tensor of v's dtype and storage shape owning b's bytes (b.f for float32 values, b.q for 8-bit ones,
// which must hold exactly the value's bytes; int64 / int32 / bool values, which the runtime holds widened
// in b.idx, are narrowed into bytes of the tensor's own). When the tensor is freed, its byte storage goes
// to a pool that output_storage draws from.
tvm::ffi::Tensor owning_tensor(Buffer&& b, const Value& v);

// Storage for an 8-bit output of `bytes` bytes: a vector of exactly that size from the pool (no
// allocation and no zeroing when the runner resizes it), or an empty one.
std::vector<uint8_t> output_storage(size_t bytes);

// The inputs of one call taken over from tensors of owning_tensor, given back when it ends.
class BorrowedInputs {
 public:
  BorrowedInputs() = default;
  BorrowedInputs(const BorrowedInputs&) = delete;
  BorrowedInputs& operator=(const BorrowedInputs&) = delete;
  ~BorrowedInputs() { give_back(); }

  // Moves t's storage into b when t is a tensor of owning_tensor that no other call holds, with v's dtype
  // (float32 or 8-bit) and storage shape and no byte offset; returns false (b untouched) otherwise.
  bool take(const DLTensor* t, const Value& v, Buffer& b);
  // Gives every storage back (also on an exception, from the destructor). Returns false if a node
  // changed an input's storage (the runners only read their inputs), which would leave a tensor's data
  // pointer dangling.
  bool give_back();

 private:
  struct Loan {
    std::shared_ptr<OwnedStorage> owner;
    Buffer* into;
    const void* data;  // the tensor's
  };
  std::vector<Loan> loans_;
};

}  // namespace qnnpy
