// Dynamic quantization: the dynamic_linear node builder and the run-time qparams rule.
#include "bindings/bindings.h"
#include "bindings/numpy_views.h"
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
