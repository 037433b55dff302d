// qnnpy's integer kernels as TVM global functions (tvm-ffi).
//
// Calling convention: one function runs every node, in either of two styles:
//     output = call_node(spec, input_0, ..., input_k)     (what the kernels form calls)
//     run_node(spec, input_0, ..., input_k, output)       (destination-passing)
// call_node returns a new tensor that owns the node's output storage, and a call that reads such a tensor
// takes its storage over for the time of the call (owned_tensors.h), so activations pass between calls
// without copies; run_node copies its output into the caller's tensor. Other tensors are copied in. The calls of
// a module with a symbolic dim pass its size after the spec (call_node(spec, size, inputs...)): the node is
// rebuilt for each size met (node_spec.h, prepared_node.h).
// `spec` is the node's description (node_spec.h), a uint8 constant of the Relax module:
// op, attributes, qparams, weights and profile. The first call with a spec tensor
// decodes it and packs the weights (prepared_node.h); every later call finds the
// prepared node, so weights are packed once per loaded module, at the node's first
// call, never per call. One function with a per-node spec (rather than a function per
// op family with attributes as arguments) keeps every op of the runtime available
// through the runtime's own node code, so the kernels form computes exactly what
// the runtime computes. Tensors use the runtime's storage order: rank-4 8-bit
// values are NHWC, so no layout conversion happens between calls; the module's
// float inputs and outputs are NCHW (quantize and dequantize convert, as in the runtime).
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/serialize.h"
#include "tvm_kernels/graph_split.h"
#include "tvm_kernels/owned_tensors.h"
#include "tvm_kernels/prepared_node.h"
#include "tvm_kernels/tensor_io.h"

namespace qnnpy {
namespace {

namespace ffi = tvm::ffi;

std::atomic<int> num_threads{1};

// The kernels of this process: QNNPY_ISA (default: the best the CPU has) read at the first use.
Isa process_isa() {
  static const Isa isa = default_isa();
  return isa;
}

// Bad input (std::invalid_argument) reaches Python as ValueError, not InternalError.
template <class Fn>
auto as_value_error(Fn fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::invalid_argument& e) {
    throw ffi::Error("ValueError", e.what(), "");
  }
}

// Errors name the function, the node (op and PyTorch source) and the argument.
[[noreturn]] void fail(const Node& n, const char* function, const std::string& argument, const std::exception& e) {
  throw std::invalid_argument(std::string(function) + ": " + n.op + " (" + n.source + ") " + argument + " " + e.what());
}

// Whether input i of n is the first of n's inputs to read its value (the node's one-node graph has an input per
// value read, node_spec.cpp).
bool first_read(const Node& n, size_t i) {
  return std::find(n.inputs.begin(), n.inputs.begin() + i, n.inputs[i]) == n.inputs.begin() + i;
}

// The logical shape of a call's tensor holding the node's input `v` (rank-4 8-bit values come NHWC,
// graph_split.h).
Shape logical_shape(const DLTensor* t, const Value& v) {
  Shape s(t->shape, t->shape + t->ndim);
  if (!is_plain_dtype(v.dtype) && s.size() == 4) s = {s[0], s[3], s[1], s[2]};
  return s;
}

// A call's node and where its input tensors start in args: spec, [size,] inputs..., [output]. The size comes with
// the calls of a spec that has a symbolic dim (node_spec.h); the node is the spec's at that size, shaped by the inputs.
struct CallNode {
  std::shared_ptr<const PreparedNode> node;
  int first_input = 1;
};

CallNode node_of(ffi::PackedArgs args, int outputs, const char* function) {
  if (args.size() < 1 + outputs) throw std::invalid_argument(std::string(function) + ": too few arguments");
  auto spec = args[0].try_cast<ffi::Tensor>();
  if (!spec) throw std::invalid_argument(std::string(function) + ": argument 0 must be the node spec tensor");
  auto decoded = spec_node(*spec);
  const Node& n = decoded->node();
  const int first_input = decoded->symbolic() ? 2 : 1;
  if (static_cast<size_t>(args.size()) != n.inputs.size() + first_input + outputs) {
    throw std::invalid_argument(std::string(function) + ": " + n.op + " (" + n.source + "): " +
                                (decoded->symbolic() ? "the size, " : "") + std::to_string(n.inputs.size()) +
                                " input(s)" + (outputs ? " and an output" : "") + " expected, got " +
                                std::to_string(args.size() - 1) + " argument(s)");
  }
  if (!decoded->symbolic()) return {decoded->fixed(), first_input};
  auto size = args[1].try_cast<int64_t>();
  if (!size) throw std::invalid_argument(std::string(function) + ": " + n.op + " (" + n.source + "): argument 1 must be the size");
  const Graph& spec_graph = decoded->spec_graph();
  std::vector<Shape> shapes;  // one per input of the one-node graph: the node's inputs, each once
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!first_read(n, i)) continue;
    shapes.push_back(logical_shape(args[static_cast<int>(i) + first_input].cast<DLTensor*>(), spec_graph.value(n.inputs[i])));
  }
  return {decoded->at(*size, shapes), first_input};
}

// Runs the node on its input tensors args[first_input..]: each taken over where it is a tensor of call_node's
// (owned_tensors.h), else copied. Its output is left in values[n.output].
void run_inputs(const CallNode& call, ffi::PackedArgs args, std::vector<Buffer>& values, const char* function) {
  const PreparedNode& node = *call.node;
  const Graph& g = node.graph;
  const Node& n = node.node();
  BorrowedInputs borrowed;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!first_read(n, i)) continue;  // a value read twice (add(q, q)) is one buffer, filled by its first input
    Buffer& b = values[n.inputs[i]];
    const DLTensor* t = args[static_cast<int>(i) + call.first_input].cast<DLTensor*>();
    try {
      if (!borrowed.take(t, g.value(n.inputs[i]), b)) read_tensor(t, g.value(n.inputs[i]), b);
    } catch (const std::exception& e) {
      fail(n, function, "input " + std::to_string(i), e);
    }
    b.torch_channels_last = node.input_layouts[i].torch_channels_last;
    b.torch_dense = node.input_layouts[i].torch_dense;
  }
  const Value& out = g.value(n.output);
  if (!is_plain_dtype(out.dtype)) {  // an 8-bit output
    values[n.output].q = output_storage(static_cast<size_t>(num_elements(out.shape)) * dtype_size(out.dtype));
  }
  node.runner.run(g, n, values, kernel_set(process_isa()), num_threads.load());
  if (!borrowed.give_back()) throw std::logic_error(n.op + " (" + n.source + ") changed an input's storage");
}

// run_node(spec, [size,] inputs..., output): destination-passing, the output copied into the caller's tensor.
void run_node(ffi::PackedArgs args, ffi::Any*) {
  as_value_error([&] {
    constexpr const char* kName = "qnnpy.kernels.run_node";
    const CallNode call = node_of(args, 1, kName);
    const Node& n = call.node->node();
    std::vector<Buffer> values(call.node->graph.values().size());
    run_inputs(call, args, values, kName);
    try {
      write_tensor(values[n.output], call.node->graph.value(n.output), args[args.size() - 1].cast<DLTensor*>());
    } catch (const std::exception& e) {
      fail(n, kName, "output", e);
    }
  });
}

// call_node(spec, [size,] inputs...) -> output: the output is a new tensor owning the node's output storage, which
// the next call that reads it takes over without a copy (owned_tensors.h).
void call_node(ffi::PackedArgs args, ffi::Any* result) {
  as_value_error([&] {
    constexpr const char* kName = "qnnpy.kernels.call_node";
    const CallNode call = node_of(args, 0, kName);
    const Node& n = call.node->node();
    std::vector<Buffer> values(call.node->graph.values().size());
    run_inputs(call, args, values, kName);
    *result = owning_tensor(std::move(values[n.output]), call.node->graph.value(n.output));
  });
}

// [spec bytes, output dtype, output storage shape, its slopes (empty without a symbolic dim)] per node of a
// serialized graph.
ffi::Array<ffi::Array<ffi::Any>> split_graph_calls(const ffi::Bytes& graph, const ffi::String& profile) {
  return as_value_error([&] {
    const Graph g = deserialize_graph(std::string(graph.data(), graph.size()));
    ffi::Array<ffi::Array<ffi::Any>> calls;
    for (const NodeCall& c : split_graph(g, parse_profile(std::string(profile)))) {
      calls.push_back(ffi::Array<ffi::Any>{ffi::Bytes(c.spec), ffi::String(dtype_name(c.dtype)),
                                           ffi::Shape(c.storage_shape.begin(), c.storage_shape.end()),
                                           ffi::Shape(c.storage_slopes.begin(), c.storage_slopes.end())});
    }
    return calls;
  });
}

void set_num_threads(int64_t threads) {
  if (threads < 1) throw ffi::Error("ValueError", "qnnpy.kernels.set_num_threads: threads must be >= 1, got " +
                                                      std::to_string(threads), "");
  num_threads = static_cast<int>(threads);
}

}  // namespace
}  // namespace qnnpy

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef()
      .def_packed("qnnpy.kernels.run_node", qnnpy::run_node)
      .def_packed("qnnpy.kernels.call_node", qnnpy::call_node)
      .def("qnnpy.kernels.split_graph", qnnpy::split_graph_calls)
      .def("qnnpy.kernels.set_num_threads", qnnpy::set_num_threads)
      .def("qnnpy.kernels.num_threads", [] { return static_cast<int64_t>(qnnpy::num_threads.load()); })
      .def("qnnpy.kernels.isa", [] { return tvm::ffi::String(qnnpy::isa_name(qnnpy::process_isa())); })
      .def("qnnpy.kernels.prepared_node_count", qnnpy::prepared_node_count)
      .def("qnnpy.kernels.cached_node_count", qnnpy::cached_node_count);
}
