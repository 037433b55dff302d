// Dynamic quantization: the dynamic_linear node builder and the run-time qparams rule.
#include "bindings/bindings.h"
#include "bindings/numpy_views.h"
#include "layer_import/affine_node.h"
#include "layer_import/dynamic_linear_node.h"
#include "runtime/dynamic_qparams.h"

namespace qnnpy::bindings {

void bind_dynamic(py::module_& m) {
  m.def(
      "add_dynamic_linear",
      [](Graph& g, int x, const std::string& source, const std::string& name, const Int8Array& weight,
         const FloatArray& weight_scale, const IntArray& weight_zero_point, int weight_axis, std::optional<FloatArray> bias,
         bool relu, bool reduce_range, const Shape& expected_shape) {
        const FloatSpan b = bias ? span_of(*bias) : FloatSpan{};
        LayerNode layer;
        layer.input = x;
        layer.source = source;
        layer.name = name;
        layer.weight.data = weight.data();
        layer.weight.shape = shape_of(weight);
        layer.weight.q = make_qparams(weight_scale, weight_zero_point, weight_axis);
        layer.bias = bias ? &b : nullptr;
        layer.relu = relu;
        layer.expected_shape = expected_shape;
        return add_dynamic_linear_node(g, std::move(layer), reduce_range);
      },
      py::arg("graph"), py::arg("x"), py::arg("source"), py::arg("name"), py::arg("weight"), py::arg("weight_scale"),
      py::arg("weight_zero_point"), py::arg("weight_axis"), py::arg("bias"), py::arg("relu"), py::arg("reduce_range"),
      py::arg("expected_shape") = Shape{},
      "Adds a dynamic_linear node (float in, float out) with its int8 weight and float bias; returns the output id.");
  m.def(
      "add_affine_layer",
      [](Graph& g, const std::string& op, int x, const std::string& source, const std::string& name, const Int8Array& weight,
         const FloatArray& weight_scale, const Int8Array& weight_zero_point, int64_t group_size, std::optional<FloatArray> bias,
         int weight_bits, const std::map<std::string, std::vector<int64_t>>& ints, const Shape& expected_shape,
         std::optional<FloatArray> weight_offset) {
        const std::string where = op + " (" + source + "): ";
        if (weight.ndim() != 2) throw std::invalid_argument(where + "weight must be 2-D, got " + shape_str(shape_of(weight)));
        AffineLayer layer;
        layer.op = op;
        layer.input = x;
        layer.source = source;
        layer.name = name;
        layer.weight = weight.data();
        layer.rows = weight.shape(0);
        layer.cols = weight.shape(1);
        layer.group_size = group_size;
        const int64_t groups = group_size > 0 ? layer.rows * (layer.cols / group_size) : 0;
        if (static_cast<int64_t>(weight_scale.size()) != groups || static_cast<int64_t>(weight_zero_point.size()) != groups) {
          throw std::invalid_argument(where + "needs " + std::to_string(groups) + " group scales and zero points, got " +
                                      std::to_string(weight_scale.size()) + " and " + std::to_string(weight_zero_point.size()));
        }
        if (weight_offset && static_cast<int64_t>(weight_offset->size()) != groups) {
          throw std::invalid_argument(where + "needs " + std::to_string(groups) + " group offsets, got " +
                                      std::to_string(weight_offset->size()));
        }
        if (bias && static_cast<int64_t>(bias->size()) != layer.rows) {
          throw std::invalid_argument(where + "bias has " + std::to_string(bias->size()) + " values for " +
                                      std::to_string(layer.rows) + " output channels");
        }
        layer.weight_scale = weight_scale.data();
        layer.weight_zero_point = weight_zero_point.data();
        layer.weight_offset = weight_offset ? weight_offset->data() : nullptr;
        layer.bias = bias ? bias->data() : nullptr;
        layer.weight_bits = weight_bits;
        layer.ints = ints;
        layer.expected_shape = expected_shape;
        return add_affine_node(g, layer);
      },
      py::arg("graph"), py::arg("op"), py::arg("x"), py::arg("source"), py::arg("name"), py::arg("weight"),
      py::arg("weight_scale"), py::arg("weight_zero_point"), py::arg("group_size"), py::arg("bias"), py::arg("weight_bits"),
      py::arg("ints") = std::map<std::string, std::vector<int64_t>>{}, py::arg("expected_shape") = Shape{},
      py::arg("weight_offset") = std::nullopt,
      "Adds a torchao quantize_ layer, affine_linear (float input x) or affine_embedding (indices x), with its int8 "
      "weight, its group scales and zero points (row-major, one per group_size columns of a row), optionally a float "
      "offset per group (PyTorch's int4 tinygemm form) and, for a linear, "
      "its float bias and the ints 'activation' (0 weight-only, 1 int8 symmetric per token, 2 int8 asymmetric per "
      "token) and 'scale_after_dot'; returns the output id.");
  m.def(
      "choose_dynamic_qparams",
      [](const FloatArray& x, bool reduce_range) {
        float lo, hi;
        find_min_max(x.data(), x.size(), &lo, &hi);
        const DynamicQParams q = choose_dynamic_qparams(lo, hi, reduce_range);
        return py::make_tuple(q.scale, q.zero_point);
      },
      py::arg("x"), py::arg("reduce_range"),
      "The (scale, zero_point) dynamic_linear picks for input x: fbgemm's rule (runtime/dynamic_qparams.h).");
}

}  // namespace qnnpy::bindings
