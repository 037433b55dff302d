// Adds the node of a dynamic quantized linear (torch.ao.nn.quantized.dynamic.Linear)
// from its parts as PyTorch holds them: the int8 weight and the float bias.
#pragma once

#include "layer_import/layer_nodes.h"

namespace qnnpy {

// `layer.output` is unused (the output is float32); `reduce_range` is the argument
// PyTorch passes to quantized::linear_dynamic (nnqd.Linear passes true).
int add_dynamic_linear_node(Graph& g, LayerNode layer, bool reduce_range);

}  // namespace qnnpy
