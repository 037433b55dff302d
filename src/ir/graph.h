// The graph IR: typed integer tensors with quantization parameters, constant
// params owned by the graph, and one node per quantized operator.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/param_bytes.h"
#include "ir/symbolic.h"

namespace qnnpy {

using Shape = std::vector<int64_t>;

int64_t num_elements(const Shape& shape);
// `shape` seen as outer x length x inner around `axis` (< rank): the products of the axes before it, its
// extent, the product of the axes after it.
struct AxisSplit {
  int64_t outer, length, inner;
};
AxisSplit split_at_axis(const Shape& shape, size_t axis);
// The element count of `shape` after checking every axis is in [1, kMaxExtent] (ir/limits.h),
// the rank at most kMaxRank and the count at most kMaxElements; throws
// std::invalid_argument starting with `what` otherwise. Never overflows.
int64_t checked_num_elements(const Shape& shape, const std::string& what);
std::string shape_str(const Shape& shape);
// Throws std::invalid_argument, starting with `what`, when `text` holds a control byte (below
// 0x20, or 0x7f): names from a file end up in error messages, where a NUL would cut the text
// (std::exception::what() is a C string) and other control bytes would garble a terminal.
void check_printable(const std::string& text, const std::string& what);

// Affine quantization: real = (q - zero_point) * scale.
// One entry means per-tensor (axis = -1); C entries are per channel along `axis`.
struct QParams {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  int axis = -1;

  bool empty() const { return scale.empty(); }
  bool per_channel() const { return axis >= 0; }
};

// An activation tensor flowing between nodes.
struct Value {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  QParams q;  // empty for float32 values
};

// A constant owned by the graph (weights, biases).
struct Param {
  std::string name;
  DType dtype = DType::Int8;
  Shape shape;
  ParamBytes bytes;            // dtype elements, native byte order
  QParams q;                   // of the integer weight / bias
  bool exported = true;        // false: runtime-only data, not a Relax function param
  std::string released_by;     // set by Graph::release_param: why the values are gone

  // Both throw as check_values does.
  template <class T> const T* data() const {
    check_values();
    return reinterpret_cast<const T*>(bytes.data());
  }
  template <class T> T* mutable_data() {
    check_values();
    return reinterpret_cast<T*>(bytes.data());
  }
  // Throws std::logic_error, naming the param and why, when its values were released (Graph::release_param).
  void check_values() const;
};

struct Node {
  std::string op;
  std::string source;                   // where it came from in the PyTorch model
  std::vector<int> inputs;              // value ids
  int output = -1;                      // value id
  std::map<std::string, int> params;    // role ("weight", "bias", "bias_float") -> param id
  std::map<std::string, std::vector<int64_t>> ints;
  std::map<std::string, double> floats;

  int64_t int_attr(const std::string& key) const;
  const std::vector<int64_t>& ints_attr(const std::string& key) const;
  double float_attr(const std::string& key) const;
  bool has_param(const std::string& role) const { return params.count(role) != 0; }
};

// Holds only validated nodes: add_node checks each against its op's rule (check_node,
// src/ops) and the bounds of ir/limits.h, whether the graph is built or read from a
// file, so the emitter and the runtime index qparams and allocate sizes without checks.
class Graph {
 public:
  // An input of the Relax function: float32, or int64 / int32 indices (of an embedding lookup).
  int add_input(const std::string& name, const Shape& shape, DType dtype = DType::Float32);
  int add_param(Param p);
  // Checks the node against its op definition (src/ops), infers the output shape, and, when
  // `expected_shape` is non-empty, checks it against the inferred one.
  int add_node(Node node, Value output, const Shape& expected_shape = {});
  void mark_output(int value_id);
  // Renames a value (made a unique identifier by unique_name); returns the name it got.
  std::string rename_value(int value_id, const std::string& name);
  // Makes the graph read-only: an Executor freezes the graph it runs, since its
  // runners keep references into it; adding to a frozen graph throws std::logic_error.
  void freeze() const { frozen_.set = true; }
  bool frozen() const { return frozen_.set; }

  const std::vector<Value>& values() const { return values_; }
  const std::vector<Param>& params() const { return params_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  const Value& value(int id) const;
  const Param& param(int id) const;
  const Param& node_param(const Node& n, const std::string& role) const;

  // Makes each param read the buffer of `other`'s param of the same name when their dtypes, shapes and values are
  // equal (one copy in memory for graphs converted from one model); returns how many it shares.
  int share_params(const Graph& other);
  // Frees the values of a param that only runtime ops which copied them at preparation read (see
  // release_packed_params, runtime/packed_weights.h); reading the param afterwards throws, naming `why`. True when
  // the buffer is freed (no other graph, copy or NumPy view holds it).
  bool release_param(int id, const std::string& why);

  // Dynamic batch: dim 0 of every value is the batch, any size at run time (ir/rebatch.h checks
  // that the graph allows it and makes the graph of one batch size).
  bool dynamic_batch() const { return dynamic_batch_; }
  void set_dynamic_batch(bool on) { dynamic_batch_ = on; }
  // A symbolic dim (ir/symbolic.h): some input axes of any size up to its max at run time.
  const std::optional<SymbolicDim>& symbolic_dim() const { return symbolic_dim_; }
  void set_symbolic_dim(SymbolicDim dim) { symbolic_dim_ = std::move(dim); }

  // Returns `base` made into a valid identifier, with a numeric suffix if taken.
  std::string unique_name(const std::string& base);

 private:
  int add_value(Value v);
  void check_mutable() const;

  std::vector<Value> values_;
  std::vector<Param> params_;
  std::vector<Node> nodes_;
  std::vector<int> inputs_;
  std::vector<int> outputs_;
  std::set<std::string> used_names_;
  // A one-way latch, set before any executor runs the graph; atomic, since executors built on
  // several threads at once each set it. Copies of the graph copy its state.
  struct Latch {
    mutable std::atomic<bool> set{false};
    Latch() = default;
    Latch(const Latch& other) : set(other.set.load()) {}
    Latch& operator=(const Latch& other) {
      set = other.set.load();
      return *this;
    }
  };
  Latch frozen_;
  bool dynamic_batch_ = false;
  std::optional<SymbolicDim> symbolic_dim_;
};

}  // namespace qnnpy
