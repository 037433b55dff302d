// Prints a graph as Relax TVMScript in the canonical QDQ form:
// every op is dequantize(inputs) -> float Relax op -> quantize(output).
#pragma once

#include <string>

#include "ir/graph.h"

namespace qnnpy {

std::string emit_tvmscript(const Graph& g, const std::string& func_name = "main");

}  // namespace qnnpy
