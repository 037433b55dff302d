// The bytes of a graph param: a value type whose buffer graphs can share. Graphs converted from one model (a
// decoder's step and prefill modules, a graph and its copies of another batch size) hold one buffer for params of
// equal values; writing through a copy first gives it a buffer of its own. The buffer can also be released once the
// runtime has packed it (Graph::release_param): the param then keeps its shape and name but no values.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace qnnpy {

class ParamBytes {
 public:
  ParamBytes() : buffer_(std::make_shared<std::vector<uint8_t>>()) {}
  ParamBytes(std::vector<uint8_t> bytes) : buffer_(std::make_shared<std::vector<uint8_t>>(std::move(bytes))) {}

  const uint8_t* data() const { return buffer_ ? buffer_->data() : nullptr; }
  uint8_t* data() { return own().data(); }
  size_t size() const { return buffer_ ? buffer_->size() : 0; }
  const uint8_t* begin() const { return data(); }
  const uint8_t* end() const { return data() + size(); }
  void resize(size_t n) { own().resize(n); }
  template <class It> void assign(It first, It last) { buffer_ = std::make_shared<std::vector<uint8_t>>(first, last); }
  const std::vector<uint8_t>& vector() const { return buffer_ ? *buffer_ : empty(); }

  // Makes this param read `other`'s buffer (the caller has checked that the values are equal).
  void share(const ParamBytes& other) { buffer_ = other.buffer_; }
  bool shares_with(const ParamBytes& other) const { return buffer_ && buffer_ == other.buffer_; }
  // Drops this param's hold on its buffer; true when it was the last hold (the buffer is freed).
  bool release() {
    const bool last = buffer_.use_count() == 1;
    buffer_.reset();
    return last;
  }
  bool released() const { return !buffer_; }
  // The buffer itself: for views that must outlive a param's hold on it (NumPy arrays of the params), and for a
  // cache of data derived from it (runtime/packed_weights.h, which keeps it weakly).
  std::shared_ptr<const std::vector<uint8_t>> buffer() const { return buffer_; }

 private:
  std::vector<uint8_t>& own() {
    if (!buffer_) buffer_ = std::make_shared<std::vector<uint8_t>>();
    else if (buffer_.use_count() > 1) buffer_ = std::make_shared<std::vector<uint8_t>>(*buffer_);
    return *buffer_;
  }
  static const std::vector<uint8_t>& empty() {
    static const std::vector<uint8_t> none;
    return none;
  }

  std::shared_ptr<std::vector<uint8_t>> buffer_;
};

}  // namespace qnnpy
