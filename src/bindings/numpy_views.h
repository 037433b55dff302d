// Conversions between numpy arrays and the core's types, shared by the binding files.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "emit/exported_params.h"
#include "ir/graph.h"
#include "layer_import/layer_nodes.h"
#include "runtime/executor.h"

namespace qnnpy::bindings {

namespace py = pybind11;

using Int8Array = py::array_t<int8_t, py::array::c_style>;
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using IntArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

template <class T, class A>
std::vector<T> to_vector(const A& a) {
  std::vector<T> v(a.size());
  for (py::ssize_t i = 0; i < a.size(); ++i) v[i] = static_cast<T>(a.data()[i]);
  return v;
}

Shape shape_of(const py::array& a);
FloatSpan span_of(const FloatArray& a);
QParams make_qparams(const FloatArray& scale, const IntArray& zero_point, int axis);
// An output value: dtype by name, per-tensor qparams when given.
Value make_output(const std::string& name, const std::string& dtype, std::optional<float> scale, std::optional<int> zero_point);
// A read-only numpy view of a param's bytes, kept alive by `owner`.
py::array param_view(const ExportedParam& p, py::handle owner);
py::array host_to_numpy(const HostTensor& t);

}  // namespace qnnpy::bindings
