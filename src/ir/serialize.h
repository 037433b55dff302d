// A self-contained binary file format for the graph IR (`graph.qnnpy`), so a
// saved module can be reloaded, re-emitted and run without the source model.
#pragma once

#include <string>

#include "ir/graph.h"

namespace qnnpy {

std::string serialize_graph(const Graph& g);
// Rebuilds the graph through the validating Graph API; throws on bad data.
Graph deserialize_graph(const std::string& bytes);

}  // namespace qnnpy
