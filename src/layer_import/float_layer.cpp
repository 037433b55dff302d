#include "layer_import/float_layer.h"

#include "ir/limits.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace qnnpy {

int add_float_layer_node(Graph& g, const std::string& op, int input, const std::string& source, const std::string& name,
                         const WeightView& weight, const float* float_weight, const float* bias, std::map<std::string, std::vector<int64_t>> ints,
                         const Shape& expected_shape) {
  if (op != "float_conv2d" && op != "float_linear") throw std::invalid_argument(op + " (" + source + "): not a float layer op");
  Node n;
  n.op = op;
  n.source = source;
  n.inputs = {input};
  // The 8-bit source of a dequantized input, as a second input (ops/float_ops.cpp), when the
  // exact int32 sums fit (ir/limits.h).
  const int64_t reduction = num_elements(weight.shape) / std::max<int64_t>(1, weight.shape.at(0));
  if (!float_weight && reduction <= kMaxReductionLength) {
    for (const Node& m : g.nodes()) {
      if (m.output != input || m.op != "dequantize") continue;
      const Value& q = g.value(m.inputs.at(0));
      if ((q.dtype == DType::UInt8 || q.dtype == DType::Int8) && q.q.scale.size() == 1) n.inputs.push_back(m.inputs[0]);
    }
  }
  n.ints = std::move(ints);
  Param w;
  w.name = g.unique_name(name + "_weight");
  w.dtype = float_weight ? DType::Float32 : DType::Int8;
  w.shape = weight.shape;
  if (!float_weight) w.q = weight.q;
  w.bytes.resize(static_cast<size_t>(num_elements(weight.shape)) * (float_weight ? sizeof(float) : 1));
  std::memcpy(w.bytes.data(), float_weight ? static_cast<const void*>(float_weight) : weight.data, w.bytes.size());
  n.params["weight"] = g.add_param(std::move(w));
  if (bias != nullptr) {
    Param b;
    b.name = g.unique_name(name + "_bias");
    b.dtype = DType::Float32;
    b.shape = {weight.shape.at(0)};
    b.bytes.resize(static_cast<size_t>(weight.shape[0]) * sizeof(float));
    std::memcpy(b.bytes.data(), bias, b.bytes.size());
    n.params["bias_float"] = g.add_param(std::move(b));
  }
  Value out;
  out.name = name;
  out.dtype = DType::Float32;
  return g.add_node(std::move(n), std::move(out), expected_shape);
}

}  // namespace qnnpy
