// The Relax function parameters that carry a graph's constants, in order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace qnnpy {

// One function parameter. Per-channel quantized params bring their scales
// (`<name>_scale`, float32) and, when any is nonzero, their zero points
// (`<name>_zero_point`, int32) as extra parameters.
struct ExportedParam {
  std::string name;
  DType dtype;
  Shape shape;
  const uint8_t* bytes;  // points into the graph's param storage
  // The param's buffer (null for the scales and zero points, which the graph's qparams hold): a view of `bytes`
  // that keeps it stays valid after the graph shares or releases the param.
  std::shared_ptr<const std::vector<uint8_t>> buffer;
};

std::vector<ExportedParam> exported_params(const Graph& g);

bool has_nonzero_zero_point(const QParams& q);

}  // namespace qnnpy
