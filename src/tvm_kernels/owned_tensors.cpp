#include "tvm_kernels/owned_tensors.h"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "runtime/integer_values.h"
#include "tvm_kernels/graph_split.h"
#include "tvm_kernels/tensor_io.h"

namespace qnnpy {

struct OwnedStorage {
  std::vector<uint8_t> q;
  std::vector<float> f;
  bool is_float = false;
  std::atomic<bool> lent{false};  // moved into a call's Buffer for the time of the call

  const void* data() const { return is_float ? static_cast<const void*>(f.data()) : q.data(); }
};

namespace {

// At most this many spare vectors of one size: a model's activations come in a few sizes, each needed a
// few times at once (a residual block holds two).
constexpr size_t kSparePerSize = 4;

struct Registry {
  std::mutex mutex;
  // The live tensors' storage by data pointer.
  std::unordered_map<const void*, std::shared_ptr<OwnedStorage>> live;
  // Freed tensors' 8-bit storage by size.
  std::unordered_map<size_t, std::vector<std::vector<uint8_t>>> spare;
};

// Never destroyed: a tensor may be freed during the process's static destruction (a C++ program's static
// holding one), after a namespace-scope registry would be gone.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// tvm-ffi's allocator interface (Tensor::FromNDAlloc): the data is the storage's, registered while the
// tensor lives.
struct StorageAlloc {
  std::shared_ptr<OwnedStorage> storage;

  void AllocData(DLTensor* t) {
    t->data = const_cast<void*>(storage->data());
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (t->data) r.live[t->data] = storage;
  }
  void FreeData(DLTensor* t) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (t->data) r.live.erase(t->data);
    if (storage->is_float || storage->q.empty()) return;
    auto& same_size = r.spare[storage->q.size()];
    if (same_size.size() < kSparePerSize) same_size.push_back(std::move(storage->q));
  }
};

size_t value_bytes(const Value& v) { return static_cast<size_t>(num_elements(v.shape)) * dtype_size(v.dtype); }

}  // namespace

tvm::ffi::Tensor owning_tensor(Buffer&& b, const Value& v) {
  auto storage = std::make_shared<OwnedStorage>();
  storage->is_float = v.dtype == DType::Float32;
  const bool integers = is_integer_storage(v.dtype);
  const size_t have = storage->is_float ? b.f.size() * sizeof(float)
                      : integers        ? b.idx.size() * dtype_size(v.dtype)
                                        : b.q.size();
  if (have != value_bytes(v)) {
    throw std::logic_error("'" + v.name + "': the kernel wrote " + std::to_string(have) + " bytes, " +
                           std::to_string(value_bytes(v)) + " expected");
  }
  if (storage->is_float) {
    storage->f = std::move(b.f);
  } else if (integers) {  // held widened to int64 (runtime/integer_values.h): narrowed into bytes of its own
    storage->q.resize(have);
    write_integers(b.idx, v.dtype, storage->q.data());
  } else {
    storage->q = std::move(b.q);
  }
  const Shape shape = storage_shape(v);
  return tvm::ffi::Tensor::FromNDAlloc(StorageAlloc{storage}, tvm::ffi::ShapeView(shape.data(), shape.size()),
                                       dl_dtype(v.dtype), DLDevice{kDLCPU, 0});
}

std::vector<uint8_t> output_storage(size_t bytes) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.spare.find(bytes);
  if (found == r.spare.end() || found->second.empty()) return {};
  std::vector<uint8_t> q = std::move(found->second.back());
  found->second.pop_back();
  return q;
}

bool BorrowedInputs::take(const DLTensor* t, const Value& v, Buffer& b) {
  if (is_integer_storage(v.dtype)) return false;  // the runtime holds them widened: read_tensor widens a copy
  std::shared_ptr<OwnedStorage> owner;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto found = r.live.find(t->data);
    if (found == r.live.end()) return false;
    owner = found->second;
  }
  const DLDataType want = dl_dtype(v.dtype);
  const Shape expected = storage_shape(v);
  if (t->byte_offset != 0 || t->dtype.code != want.code || t->dtype.bits != want.bits || t->dtype.lanes != 1 ||
      Shape(t->shape, t->shape + t->ndim) != expected || owner->is_float != (v.dtype == DType::Float32)) {
    return false;
  }
  if (owner->lent.exchange(true)) return false;  // another call (or another input of this one) holds it
  const void* data = owner->data();
  if (owner->is_float) {
    b.f = std::move(owner->f);
  } else {
    b.q = std::move(owner->q);
  }
  loans_.push_back({std::move(owner), &b, data});
  return true;
}

bool BorrowedInputs::give_back() {
  bool unchanged = true;
  for (Loan& loan : loans_) {
    OwnedStorage& s = *loan.owner;
    if (s.is_float) {
      s.f = std::move(loan.into->f);
    } else {
      s.q = std::move(loan.into->q);
    }
    unchanged &= s.data() == loan.data;
    s.lent = false;
  }
  loans_.clear();
  return unchanged;
}

}  // namespace qnnpy
