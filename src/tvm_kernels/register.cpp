// qnnpy's integer kernels as TVM global functions (tvm-ffi).
//
// Calling convention: one function, qnnpy.kernels.run_node, runs every node, in
// destination-passing style:
//     run_node(spec, input_0, ..., input_k, output)
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

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/serialize.h"
#include "tvm_kernels/graph_split.h"
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
[[noreturn]] void fail(const Node& n, const std::string& argument, const std::exception& e) {
  throw std::invalid_argument("qnnpy.kernels.run_node: " + n.op + " (" + n.source + ") " + argument + " " + e.what());
}

void run_node(ffi::PackedArgs args, ffi::Any*) {
  as_value_error([&] {
    if (args.size() < 2) throw std::invalid_argument("qnnpy.kernels.run_node(spec, inputs..., output): too few arguments");
    auto spec = args[0].try_cast<ffi::Tensor>();
    if (!spec) throw std::invalid_argument("qnnpy.kernels.run_node: argument 0 must be the node spec tensor");
    const auto node = prepared_node(*spec);
    const Graph& g = node->spec.graph;
    const Node& n = node->spec.node();
    if (static_cast<size_t>(args.size()) != n.inputs.size() + 2) {
      throw std::invalid_argument("qnnpy.kernels.run_node: " + n.op + " (" + n.source + "): " +
                                  std::to_string(n.inputs.size()) + " input(s) and an output expected, got " +
                                  std::to_string(args.size() - 1) + " tensor(s)");
    }
    std::vector<Buffer> values(g.values().size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      Buffer& b = values[n.inputs[i]];
      try {
        read_tensor(args[i + 1].cast<DLTensor*>(), g.value(n.inputs[i]), b);
      } catch (const std::exception& e) {
        fail(n, "input " + std::to_string(i), e);
      }
      b.torch_channels_last = node->spec.input_layouts[i].torch_channels_last;
      b.torch_dense = node->spec.input_layouts[i].torch_dense;
    }
    node->runner.run(g, n, values, kernel_set(process_isa()), num_threads.load());
    try {
      write_tensor(values[n.output], g.value(n.output), args[args.size() - 1].cast<DLTensor*>());
    } catch (const std::exception& e) {
      fail(n, "output", e);
    }
  });
}

// [spec bytes, output dtype, output storage shape] per node of a serialized graph.
ffi::Array<ffi::Array<ffi::Any>> split_graph_calls(const ffi::Bytes& graph, const ffi::String& profile) {
  return as_value_error([&] {
    const Graph g = deserialize_graph(std::string(graph.data(), graph.size()));
    ffi::Array<ffi::Array<ffi::Any>> calls;
    for (const NodeCall& c : split_graph(g, parse_profile(std::string(profile)))) {
      calls.push_back(ffi::Array<ffi::Any>{ffi::Bytes(c.spec), ffi::String(dtype_name(c.dtype)),
                                           ffi::Shape(c.storage_shape.begin(), c.storage_shape.end())});
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
      .def("qnnpy.kernels.split_graph", qnnpy::split_graph_calls)
      .def("qnnpy.kernels.set_num_threads", qnnpy::set_num_threads)
      .def("qnnpy.kernels.num_threads", [] { return static_cast<int64_t>(qnnpy::num_threads.load()); })
      .def("qnnpy.kernels.isa", [] { return tvm::ffi::String(qnnpy::isa_name(qnnpy::process_isa())); })
      .def("qnnpy.kernels.prepared_node_count", qnnpy::prepared_node_count)
      .def("qnnpy.kernels.cached_node_count", qnnpy::cached_node_count);
}
