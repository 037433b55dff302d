#include <algorithm>
#include <map>
#include <memory>

#include "bindings/bindings.h"
#include "bindings/numpy_views.h"
#include "runtime/executor.h"
#include "runtime/integer_values.h"

namespace qnnpy::bindings {
namespace {

// Input `a` for graph input `v`: float32 for a float input (other float or integer arrays are
// cast, as before), the index dtype for an index input, which takes integer arrays only.
py::array checked(py::array a) {
  if (!a) throw py::error_already_set();
  return a;
}

py::array typed_input(const py::array& a, const Value& v) {
  if (v.dtype == DType::Float32) return checked(FloatArray::ensure(a));
  const char kind = a.dtype().kind();
  if (v.dtype == DType::Bool) {
    if (kind != 'b') throw std::invalid_argument("runtime: input '" + v.name + "' takes a bool array, got " + std::string(py::str(a.dtype())));
    return checked(py::array_t<bool, py::array::c_style | py::array::forcecast>::ensure(a));
  }
  if (kind != 'i' && kind != 'u') {
    throw std::invalid_argument("runtime: input '" + v.name + "' takes " + dtype_name(v.dtype) + " indices, got an array of " +
                                std::string(py::str(a.dtype())));
  }
  if (kind == 'u' && a.dtype().itemsize() == 8) {
    throw std::invalid_argument("runtime: input '" + v.name + "' takes int64 indices, got uint64");
  }
  if (v.dtype == DType::Int64) return checked(py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a));
  if (a.dtype().itemsize() > 4 || (kind == 'u' && a.dtype().itemsize() == 4)) {
    throw std::invalid_argument("runtime: input '" + v.name + "' takes int32 indices, got " + std::string(py::str(a.dtype())));
  }
  return checked(py::array_t<int32_t, py::array::c_style | py::array::forcecast>::ensure(a));
}


// Runs `e` on `inputs` for its graph inputs from `first` on (the ones before come from `carried`).
py::tuple run_executor(Executor& e, const std::vector<py::array>& inputs, size_t first, bool capture,
                       const std::map<std::string, py::array>& feed, CarriedState* carried) {
  const Graph& g = e.graph();
  std::map<std::string, int> ids;
  for (size_t i = 0; i < g.values().size(); ++i) ids[g.values()[i].name] = static_cast<int>(i);
  std::map<int, HostTensor> fed;
  for (const auto& [name, array] : feed) {
    if (!ids.count(name)) throw std::invalid_argument("runtime: no value named '" + name + "' to feed");
    const py::array a = py::array::ensure(array, py::array::c_style);
    HostTensor t;
    t.dtype = dtype_from_name(py::str(a.dtype()).cast<std::string>());
    t.shape = shape_of(a);
    t.bytes.assign(static_cast<const uint8_t*>(a.data()), static_cast<const uint8_t*>(a.data()) + a.nbytes());
    fed[ids[name]] = std::move(t);
  }
  if (first + inputs.size() != g.inputs().size()) {
    throw std::invalid_argument("runtime: " + std::to_string(g.inputs().size() - std::min(first, g.inputs().size())) +
                                " input(s) expected, got " + std::to_string(inputs.size()));
  }
  std::vector<py::array> held;  // C-contiguous arrays of each input's dtype, alive during the run
  std::vector<const void*> ptrs(first, nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = g.value(g.inputs()[first + i]);
    held.push_back(typed_input(inputs[i], v));
    if (shape_of(held.back()) != v.shape) {
      throw std::invalid_argument("runtime: input '" + v.name + "' must have shape " + shape_str(v.shape) + ", got " +
                                  shape_str(shape_of(held.back())));
    }
    ptrs.push_back(held.back().data());
  }
  std::map<std::string, HostTensor> captured;
  std::vector<HostTensor> outs;
  {
    py::gil_scoped_release release;
    outs = e.run(ptrs, capture ? &captured : nullptr, feed.empty() ? nullptr : &fed, carried);
  }
  py::list out_list;
  for (const auto& t : outs) {
    if (t.bytes.empty() && num_elements(t.shape) > 0) {
      out_list.append(py::none());  // written back to the carried state
    } else {
      out_list.append(host_to_numpy(t));
    }
  }
  py::dict cap;
  for (const auto& kv : captured) cap[py::str(kv.first)] = host_to_numpy(kv.second);
  return py::make_tuple(out_list, cap);
}

}  // namespace

void bind_runtime(py::module_& m) {
  m.def("follows_int32_bias_rules", [](const std::string& profile) { return follows_int32_bias_rules(parse_profile(profile)); },
        py::arg("profile"),
        "Whether ops other than conv / linear take the int32_bias (qnnpack) formulas under the profile.");
  m.def("follows_qnnpack_kernels", [](const std::string& profile) { return follows_qnnpack_kernels(parse_profile(profile)); },
        py::arg("profile"), "Whether avg_pool2d and mean take QNNPACK's own average pooling on uint8 inputs.");
  py::class_<Executor>(m, "Executor")
      .def(py::init([](std::shared_ptr<Graph> g, const std::string& profile, const std::string& isa, int threads) {
             return std::make_unique<Executor>(g, parse_profile(profile), isa.empty() ? default_isa() : parse_isa(isa),
                                               threads);
           }),
           py::arg("graph"), py::arg("profile") = "int32_bias", py::arg("isa") = "", py::arg("threads") = 1)
      .def_property_readonly("profile", [](const Executor& e) { return std::string(profile_name(e.profile())); })
      .def_property_readonly("isa", [](const Executor& e) { return std::string(isa_name(e.isa())); })
      .def("storage_bytes", &Executor::storage_bytes,
           "Bytes the values' storage keeps between runs (values alive at different times share it).")
      .def("node_seconds", &Executor::node_seconds, "Wall time of each node in the last finished run (node order).")
      .def("node_kernels", &Executor::node_kernels,
           "The kernel each conv/linear node used in the last finished run (node order; '' for other nodes).")
      .def(
          "run",
          [](Executor& e, const std::vector<py::array>& inputs, bool capture, const std::map<std::string, py::array>& feed) {
            return run_executor(e, inputs, 0, capture, feed, nullptr);
          },
          py::arg("inputs"), py::arg("capture") = false, py::arg("feed") = std::map<std::string, py::array>{},
          "Run on the inputs (float32 NCHW, or int64 / int32 indices); returns (outputs, {value name: tensor} when "
          "capture). `feed` maps value names to arrays (the value's dtype and shape) that replace those values once "
          "computed.")
      .def(
          "run_carried",
          [](Executor& e, CarriedState& carried, const std::vector<py::array>& rest) {
            return run_executor(e, rest, carried.buffers.size(), false, {}, &carried);
          },
          py::arg("carried"), py::arg("inputs"),
          "Run with the carried state as the first inputs (only the other inputs given) and written back by the "
          "outputs from carried.first_output on (returned empty); returns (outputs, {}).")
      .def(
          "carried_state",
          [](const Executor& e, const std::vector<py::array>& arrays, size_t first_output) {
            const Graph& g = e.graph();
            if (arrays.size() > g.inputs().size()) throw std::invalid_argument("runtime: more carried values than inputs");
            CarriedState state;
            state.first_output = first_output;
            for (size_t i = 0; i < arrays.size(); ++i) {
              const Value& v = g.value(g.inputs()[i]);
              const py::array a = typed_input(arrays[i], v);
              if (shape_of(a) != v.shape) {
                throw std::invalid_argument("runtime: carried value '" + v.name + "' must have shape " + shape_str(v.shape) +
                                            ", got " + shape_str(shape_of(a)));
              }
              Buffer b;
              const size_t count = static_cast<size_t>(num_elements(v.shape));
              if (v.dtype == DType::Float32) {
                b.f.assign(static_cast<const float*>(a.data()), static_cast<const float*>(a.data()) + count);
              } else if (is_integer_storage(v.dtype)) {
                b.idx = widen_integers(a.data(), count, v.dtype);
              } else {
                throw std::invalid_argument("runtime: input '" + v.name + "' (" + dtype_name(v.dtype) + ") cannot be carried");
              }
              state.buffers.push_back(std::move(b));
            }
            return state;
          },
          py::arg("arrays"), py::arg("first_output") = 1,
          "A CarriedState holding copies of `arrays` as the first inputs of this executor's graph; outputs "
          "first_output, first_output + 1, ... write them back.");
  py::class_<CarriedState>(m, "CarriedState", "Values carried from run to run inside the runtime (a KV cache).")
      .def(
          "arrays",
          [](const CarriedState& s, const Executor& e) {
            const Graph& g = e.graph();
            py::list out;
            for (size_t i = 0; i < s.buffers.size(); ++i) {
              const Value& v = g.value(g.inputs()[i]);
              HostTensor t{v.dtype, v.shape, {}};
              if (v.dtype == DType::Float32) {
                const auto* p = reinterpret_cast<const uint8_t*>(s.buffers[i].f.data());
                t.bytes.assign(p, p + s.buffers[i].f.size() * sizeof(float));
              } else {
                t.bytes = narrow_integers(s.buffers[i].idx, v.dtype);
              }
              out.append(host_to_numpy(t));
            }
            return out;
          },
          py::arg("executor"), "Copies of the carried values as arrays, typed by the executor's graph inputs.");
}

}  // namespace qnnpy::bindings
