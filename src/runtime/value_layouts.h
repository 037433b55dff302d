// The PyTorch memory layout of every value of a graph (Buffer::torch_channels_last,
// torch_dense): some of PyTorch's kernels round differently on channels_last inputs,
// so callers that run nodes one at a time (the TVM kernel library) or lower them
// elsewhere (the TVM integer lowering) need the flags the executor would see.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "runtime/buffer.h"
#include "runtime/profile.h"

namespace qnnpy {

// One buffer per value id, holding the layout flags after one run of the graph on zero
// inputs; the data of a value is dropped as soon as no later node reads it.
std::vector<Buffer> value_layouts(const Graph& g, Profile profile);

}  // namespace qnnpy
