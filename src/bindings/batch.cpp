// Dynamic batch: Graph.dynamic_batch, Graph.set_dynamic_batch and Graph.with_batch
// (added to the Graph class bind_graph defines).
#include "bindings/bindings.h"
#include "bindings/numpy_views.h"
#include "ir/rebatch.h"

namespace qnnpy::bindings {

void bind_batch(py::module_& m) {
  auto graph = py::reinterpret_borrow<py::class_<Graph, std::shared_ptr<Graph>>>(m.attr("Graph"));
  graph
      .def_property_readonly("dynamic_batch", &Graph::dynamic_batch,
                             "Whether dim 0 of every value is a batch of any size at run time.")
      .def(
          "set_dynamic_batch",
          [](Graph& g, bool on) {
            if (on) check_dynamic_batch(g);
            g.set_dynamic_batch(on);
          },
          py::arg("on"),
          "Mark the batch (dim 0 of every value) dynamic; raises ValueError naming the node that keeps "
          "the graph from running at another batch size.")
      .def(
          "with_batch", [](const Graph& g, int64_t batch) { return std::make_shared<Graph>(with_batch(g, batch)); },
          py::arg("batch"), "The same graph at batch size `batch` (its params copied).");
}

}  // namespace qnnpy::bindings
