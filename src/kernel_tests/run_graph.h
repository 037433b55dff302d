// The graph mode of qnnpy_kernel_tests: run a saved graph (graph.qnnpy, ir/serialize.h)
// on raw float32 inputs and write every output and intermediate value to a file, so that
// another machine's results (e.g. the x86 Python package's) can be compared byte for byte.
#pragma once

#include <string>

#include "kernels/kernels.h"
#include "runtime/profile.h"

namespace qnnpy::kernel_tests {

// `input_path` holds the graph inputs' float32 NCHW values back to back, in graph-input
// order. `output_path` receives, after the 8 bytes "QNNPYRUN" and a uint32 count, per
// tensor: uint32 name length, name, uint32 dtype-name length, dtype name (ir/dtype.h),
// uint32 rank, int64 dims, uint64 byte count, bytes (little-endian). Outputs are named
// "output:<i>"; the other tensors carry their value names.
void run_graph_file(const std::string& graph_path, const std::string& input_path, const std::string& output_path,
                    Profile profile, Isa isa, int threads);

}  // namespace qnnpy::kernel_tests
