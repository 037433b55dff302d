#include <map>
#include <memory>

#include "bindings/bindings.h"
#include "bindings/numpy_views.h"
#include "runtime/executor.h"

namespace qnnpy::bindings {

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
      .def("node_seconds", &Executor::node_seconds, "Wall time of each node in the last finished run (node order).")
      .def("node_kernels", &Executor::node_kernels,
           "The kernel each conv/linear node used in the last finished run (node order; '' for other nodes).")
      .def(
          "run",
          [](Executor& e, const std::vector<FloatArray>& inputs, bool capture, const std::map<std::string, py::array>& feed) {
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
            if (inputs.size() != g.inputs().size()) {
              throw std::invalid_argument("runtime: " + std::to_string(g.inputs().size()) + " input(s) expected, got " +
                                          std::to_string(inputs.size()));
            }
            std::vector<const float*> ptrs;
            for (size_t i = 0; i < inputs.size(); ++i) {
              const Value& v = g.value(g.inputs()[i]);
              if (shape_of(inputs[i]) != v.shape) {
                throw std::invalid_argument("runtime: input '" + v.name + "' must have shape " + shape_str(v.shape) +
                                            ", got " + shape_str(shape_of(inputs[i])));
              }
              ptrs.push_back(inputs[i].data());
            }
            std::map<std::string, HostTensor> captured;
            std::vector<HostTensor> outs;
            {
              py::gil_scoped_release release;
              outs = e.run(ptrs, capture ? &captured : nullptr, feed.empty() ? nullptr : &fed);
            }
            py::list out_list;
            for (const auto& t : outs) out_list.append(host_to_numpy(t));
            py::dict cap;
            for (const auto& kv : captured) cap[py::str(kv.first)] = host_to_numpy(kv.second);
            return py::make_tuple(out_list, cap);
          },
          py::arg("inputs"), py::arg("capture") = false, py::arg("feed") = std::map<std::string, py::array>{},
          "Run on float32 NCHW inputs; returns (outputs, {value name: tensor} when capture). `feed` maps value "
          "names to arrays (the value's dtype and shape) that replace those values once computed.");
}

}  // namespace qnnpy::bindings
