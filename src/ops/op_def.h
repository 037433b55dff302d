// One definition per IR op: its kind, its rule (checks and output shape), its
// TVMScript emission and its runtime runner. The graph validator, the emitter and
// the executor look ops up here only. How to add an op: docs/adding_an_op.md.
#pragma once

#include <memory>
#include <vector>

#include "ir/graph.h"
#include "ops/checker.h"
#include "runtime/prepared_op.h"
#include "runtime/profile.h"

namespace qnnpy {

class Emitter;

enum class OpKind {
  Requantizing,      // the output carries quantization parameters of its own
  QParamPreserving,  // the output moves or selects input values: the input's dtype and qparams
  Quantize,          // float32 in, quantized out
  Dequantize,        // quantized in, float32 out
  Float,             // unquantized values in and out: a part the quantizer left in float, or a dynamic
                     // quantized op (it quantizes its input inside). float32 only, unless the op
                     // takes any plain dtype (OpDef::any_dtype)
  Lookup,            // integer indices (int64 / int32) in, float32 rows of a table out: embeddings
};

struct OpDef {
  const char* name;
  OpKind kind;
  // Checks inputs, params and attributes and returns the output shape; the checks
  // of the kind (output dtype and qparams) run before it (check_node).
  Shape (*infer)(const Checker& c, const Value& out);
  // Writes the node in the canonical form: dequantize inputs -> float Relax op -> quantize.
  void (*emit)(Emitter& e, const Node& n);
  // Makes the node's runner for one Executor; null when the op cannot run, then
  // `not_runnable` says why.
  std::unique_ptr<PreparedOp> (*make_runner)(const Graph& g, const Node& n, Profile profile);
  const char* not_runnable = nullptr;
  // A Float-kind op whose float32 output equals PyTorch's bit for bit (the runtime follows
  // PyTorch's summation and rounding, e.g. dynamic_linear); compare() checks such outputs in
  // float32 ulps. False for the float ops of PT2E islands (float32 in another summation order).
  bool bit_exact_float_output = false;
  // A Float-kind op that may take, as its last input, the 8-bit tensor its first input was
  // dequantized from (float_conv2d / float_linear: the runtime then accumulates in integers).
  bool reads_quantized_source = false;
  // A Float-kind op whose rule checks the dtypes of its inputs and output itself: data movement,
  // comparisons, casts, where, constants, which also take int64 / int32 / bool values.
  bool any_dtype = false;
  // A Float-kind op that is a quantized layer: integer weights, its float input quantized inside (dynamic_linear,
  // affine_linear); summaries count it with the quantized layers, not with the float ops a quantizer left.
  bool quantizes_input = false;
  // The roles of the node's params that its runner copies (packs) when it is made and never reads afterwards;
  // null: none. Such params can be freed once the executors are made (release_packed_params,
  // runtime/packed_weights.h).
  std::vector<std::string> (*packed_param_roles)(const Node& n) = nullptr;
};

// Every op, in one table assembled from the op families (src/ops/*.cpp).
const std::vector<OpDef>& op_table();
// The definition of `n.op`; throws std::invalid_argument naming the node for an unknown op.
const OpDef& op_def(const Node& n);
const char* op_kind_name(OpKind kind);

// Checks `n` against its op's kind and rule; returns the output shape.
Shape check_node(const Graph& g, const Node& n, const Value& out);

// The op families, one file each.
std::vector<OpDef> quantize_ops();     // quantize.cpp
std::vector<OpDef> conv_ops();         // conv.cpp
std::vector<OpDef> elementwise_ops();  // elementwise.cpp
std::vector<OpDef> pool_ops();         // pool.cpp
std::vector<OpDef> pool3d_ops();       // pool3d.cpp
std::vector<OpDef> shape_ops();        // shape.cpp
std::vector<OpDef> norm_ops();         // norm.cpp
std::vector<OpDef> dynamic_ops();      // dynamic.cpp
std::vector<OpDef> affine_ops();       // affine_linear.cpp
std::vector<OpDef> softmax_ops();      // softmax.cpp
std::vector<OpDef> float_ops();        // float_ops.cpp
std::vector<OpDef> float_transformer_ops();  // float_transformer_ops.cpp
std::vector<OpDef> float_attention_ops();  // float_attention.cpp
std::vector<OpDef> float_unary_ops();  // float_unary.cpp
std::vector<OpDef> float_binary_ops();  // float_binary.cpp
std::vector<OpDef> float_movement_ops();  // float_movement.cpp
std::vector<OpDef> float_reduce_ops();  // float_reduce.cpp
std::vector<OpDef> float_scatter_ops();  // float_scatter.cpp
std::vector<OpDef> embedding_ops();    // embedding.cpp

}  // namespace qnnpy
