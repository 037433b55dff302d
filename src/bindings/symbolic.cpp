// Symbolic dims (ir/symbolic.h): generalize, Graph.symbolic_dim and Graph.at_size (added to the Graph class
// bind_graph defines).
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "bindings/numpy_views.h"
#include "ir/graph.h"

namespace qnnpy::bindings {

void bind_symbolic(py::module_& m) {
  auto graph = py::reinterpret_borrow<py::class_<Graph, std::shared_ptr<Graph>>>(m.attr("Graph"));
  graph
      .def_property_readonly(
          "symbolic_dim",
          [](const Graph& g) -> py::object {
            if (!g.symbolic_dim()) return py::none();
            const SymbolicDim& s = *g.symbolic_dim();
            py::dict d;
            d["name"] = s.name;
            d["example"] = s.example;
            d["max"] = s.max;
            d["input_axes"] = s.input_axes;
            return d;
          },
          "The symbolic dim as a dict (name, example, max, input_axes: (input index, axis) pairs), or None.")
      .def(
          "at_size", [](const Graph& g, int64_t size) { return std::make_shared<Graph>(at_size(g, size)); },
          py::arg("size"), "The graph at one size of its symbolic dim (params shared, not copied).");
  m.def(
      "generalize",
      [](const Graph& example, const Graph& at_max, const Graph& below_max, const std::string& name, int64_t example_size,
         int64_t max, const std::vector<std::pair<int, int>>& input_axes) {
        SymbolicDim spec;
        spec.name = name;
        spec.example = example_size;
        spec.max = max;
        spec.input_axes = input_axes;
        return std::make_shared<Graph>(generalize(example, at_max, below_max, spec));
      },
      py::arg("example"), py::arg("at_max"), py::arg("below_max"), py::arg("name"), py::arg("example_size"),
      py::arg("max"), py::arg("input_axes"),
      "The graph with a symbolic dim from conversions at example_size, max and max - 1; raises ValueError naming "
      "what is not the same computation at every size.");
}

}  // namespace qnnpy::bindings
