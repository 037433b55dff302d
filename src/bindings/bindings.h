// The binding files of `qnnpy._core`, one per area; each only converts arguments
// and calls the core, which does all checking.
#pragma once

#include <pybind11/pybind11.h>

namespace qnnpy::bindings {

void bind_params(pybind11::module_& m);   // params.cpp: packed conv config, bias quantization
void bind_graph(pybind11::module_& m);    // graph.cpp: Graph, op table facts
void bind_runtime(pybind11::module_& m);  // runtime.cpp: Executor
void bind_kernels(pybind11::module_& m);  // kernels.cpp: CPU features, measured peaks
void bind_fixed_point(pybind11::module_& m);  // fixed_point.cpp: the fixed_point profile's multiplier and requantization
void bind_lowering(pybind11::module_& m);     // lowering_constants.cpp: the runtime's numbers for the TVM integer lowering
void bind_dynamic(pybind11::module_& m);      // dynamic.cpp: dynamic_linear nodes, the run-time qparams rule
void bind_batch(pybind11::module_& m);        // batch.cpp: dynamic batch methods of Graph (after bind_graph)
void bind_symbolic(pybind11::module_& m);     // symbolic.cpp: symbolic dims of Graph (after bind_graph)
void bind_embedding(pybind11::module_& m);    // embedding.cpp: embedding nodes

}  // namespace qnnpy::bindings
