// Dynamic batch: the graph of one batch size, and the check that a graph is the same
// computation at every batch size (dim 0 of every value is the batch).
#pragma once

#include "ir/graph.h"

namespace qnnpy {

// `g` at batch size `batch`: inputs get dim 0 = batch, reshape targets ("shape" attributes)
// too, and every node goes through its rule again. Throws std::invalid_argument naming the
// first node whose output does not keep the batch as dim 0.
Graph with_batch(const Graph& g, int64_t batch);

// Throws std::invalid_argument when `g` cannot take any batch size: an input of rank 0,
// inputs with different dim 0, or a node whose output's dim 0 is not the batch (checked by
// building the graph at another batch size). Sets nothing.
void check_dynamic_batch(const Graph& g);

}  // namespace qnnpy
