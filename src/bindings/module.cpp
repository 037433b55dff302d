// Python bindings of the qnnpy core (`qnnpy._core`). Buffers arrive as numpy
// arrays and are read in place; params leave as read-only numpy views of the
// graph's own storage.
#include "bindings/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "qnnpy C++ core: packed-param decoding, param building, graph IR, TVMScript emitter, integer runtime";
  qnnpy::bindings::bind_params(m);
  qnnpy::bindings::bind_graph(m);
  qnnpy::bindings::bind_runtime(m);
  qnnpy::bindings::bind_kernels(m);
  qnnpy::bindings::bind_fixed_point(m);
  qnnpy::bindings::bind_lowering(m);
  qnnpy::bindings::bind_dynamic(m);
  qnnpy::bindings::bind_batch(m);
  qnnpy::bindings::bind_symbolic(m);
  qnnpy::bindings::bind_embedding(m);
}
