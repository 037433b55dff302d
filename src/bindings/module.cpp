// Python bindings of the qnnpy core (`qnnpy._core`). Buffers arrive as numpy
// arrays and are read in place; params leave as read-only numpy views of the
// graph's own storage.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>

#include "emit/exported_params.h"
#include "emit/tvmscript.h"
#include "ir/graph.h"
#include "ir/serialize.h"
#include "params/packed_state.h"
#include "params/param_builder.h"
#include "runtime/executor.h"
#include "bindings/fixed_point.h"
#include "kernels/avx2/peak.h"

namespace py = pybind11;
using namespace qnnpy;

void bind_lowering(py::module_& m);  // lowering_constants.cpp

namespace {

using Int8Array = py::array_t<int8_t, py::array::c_style>;
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using IntArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

template <class T, class A>
std::vector<T> to_vector(const A& a) {
  std::vector<T> v(a.size());
  for (py::ssize_t i = 0; i < a.size(); ++i) v[i] = static_cast<T>(a.data()[i]);
  return v;
}

Shape shape_of(const py::array& a) { return Shape(a.shape(), a.shape() + a.ndim()); }

QParams make_qparams(const FloatArray& scale, const IntArray& zero_point, int axis) {
  QParams q;
  q.scale = to_vector<float>(scale);
  q.zero_point = to_vector<int32_t>(zero_point);
  q.axis = axis;
  return q;
}

Value make_output(const std::string& name, const std::string& dtype, std::optional<float> scale,
                  std::optional<int> zero_point) {
  Value v;
  v.name = name;
  v.dtype = dtype_from_name(dtype);
  if (scale) v.q.scale = {*scale};
  if (zero_point) v.q.zero_point = {*zero_point};
  return v;
}

py::dtype numpy_dtype(DType t) { return py::dtype(dtype_name(t)); }

py::array param_view(const ExportedParam& p, py::handle owner) {
  std::vector<py::ssize_t> strides;
  py::ssize_t stride = static_cast<py::ssize_t>(dtype_size(p.dtype));
  for (auto it = p.shape.rbegin(); it != p.shape.rend(); ++it) {
    strides.insert(strides.begin(), stride);
    stride *= *it;
  }
  py::array a(numpy_dtype(p.dtype), std::vector<py::ssize_t>(p.shape.begin(), p.shape.end()), strides, p.bytes, owner);
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

py::dict value_info(const Value& v) {
  py::dict d;
  d["name"] = v.name;
  d["dtype"] = dtype_name(v.dtype);
  d["shape"] = py::tuple(py::cast(v.shape));
  d["scale"] = v.q.scale.empty() ? py::object(py::none()) : py::object(py::float_(v.q.scale[0]));
  d["zero_point"] = v.q.zero_point.empty() ? py::object(py::none()) : py::object(py::int_(v.q.zero_point[0]));
  return d;
}

py::dict node_info(const Graph& g, const Node& n) {
  py::dict d;
  d["op"] = n.op;
  d["source"] = n.source;
  py::list inputs;
  for (int id : n.inputs) inputs.append(g.value(id).name);
  d["inputs"] = inputs;
  d["output"] = g.value(n.output).name;
  py::dict params;
  for (const auto& kv : n.params) params[py::str(kv.first)] = g.param(kv.second).name;
  d["params"] = params;
  d["ints"] = n.ints;
  d["floats"] = n.floats;
  return d;
}

int add_weighted_layer(Graph& g, const std::string& op, int x, const std::string& source, const std::string& name,
                       const Int8Array& weight, const FloatArray& weight_scale, const IntArray& weight_zero_point,
                       int weight_axis, std::optional<FloatArray> bias, Node node, Value out, const Shape& expected,
                       int64_t out_channels = -1) {
  WeightView w;
  w.data = weight.data();
  w.shape = shape_of(weight);
  w.q = make_qparams(weight_scale, weight_zero_point, weight_axis);
  const Value& in = g.value(x);
  if (in.q.scale.size() != 1) throw std::invalid_argument(op + " (" + source + "): input must be quantized per tensor");
  const int64_t channels = out_channels < 0 ? w.shape.at(0) : out_channels;
  if (bias && bias->size() != channels) {
    throw std::invalid_argument(op + " (" + source + "): bias has " + std::to_string(bias->size()) + " values for " +
                                std::to_string(channels) + " output channels");
  }
  LayerParams lp = add_layer_params(g, name, w, bias ? bias->data() : nullptr, in.q.scale[0], channels);
  node.op = op;
  node.source = source;
  node.inputs = {x};
  node.params["weight"] = lp.weight;
  if (lp.bias >= 0) {
    node.params["bias"] = lp.bias;
    node.params["bias_float"] = lp.bias_float;
    node.ints["bias_saturated"] = {lp.bias_saturated};
  }
  out.name = name;
  return g.add_node(std::move(node), std::move(out), expected);
}

// decode_conv_config, with the layer's path in the error.
ConvConfig decode_conv_config_at(const std::string& source, int state_version, const IntArray& config) {
  try {
    return decode_conv_config(state_version, to_vector<int64_t>(config));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(source + ": " + e.what());
  }
}

py::array host_to_numpy(const HostTensor& t) {
  py::array a(numpy_dtype(t.dtype), std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
  std::memcpy(a.mutable_data(), t.bytes.data(), t.bytes.size());
  return a;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "qnnpy C++ core: packed-param decoding, param building, graph IR, TVMScript emitter";
  bind_lowering(m);

  m.def(
      "decode_conv_config",
      [](int version, const IntArray& config) {
        ConvConfig c = decode_conv_config(version, to_vector<int64_t>(config));
        py::dict d;
        d["spatial_dims"] = c.spatial_dims;
        d["stride"] = c.stride;
        d["padding"] = c.padding;
        d["dilation"] = c.dilation;
        d["output_padding"] = c.output_padding;
        d["groups"] = c.groups;
        d["transpose"] = c.transpose;
        return d;
      },
      py::arg("version"), py::arg("config"),
      "Decode the configuration vector of a conv packed-params state (versions 2 and 3).");

  m.def("bias_scale", &bias_scale, py::arg("input_scale"), py::arg("weight_scale"));
  m.def(
      "quantize_bias",
      [](float bias, float scale) {
        bool saturated = false;
        int32_t q = quantize_bias(bias, scale, &saturated);
        return py::make_tuple(q, saturated);
      },
      py::arg("bias"), py::arg("scale"));

  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph")
      .def(py::init<>())
      .def("add_input", &Graph::add_input, py::arg("name"), py::arg("shape"))
      .def(
          "add_node",
          [](Graph& g, const std::string& op, const std::vector<int>& inputs, const std::string& source,
             const std::string& out_name, const std::string& out_dtype, std::optional<float> out_scale,
             std::optional<int> out_zero_point, const std::map<std::string, std::vector<int64_t>>& ints,
             const std::map<std::string, double>& floats, const Shape& expected_shape) {
            Node n;
            n.op = op;
            n.source = source;
            n.inputs = inputs;
            n.ints = ints;
            n.floats = floats;
            return g.add_node(std::move(n), make_output(out_name, out_dtype, out_scale, out_zero_point), expected_shape);
          },
          py::arg("op"), py::arg("inputs"), py::arg("source"), py::arg("out_name"), py::arg("out_dtype"),
          py::arg("out_scale") = py::none(), py::arg("out_zero_point") = py::none(),
          py::arg("ints") = std::map<std::string, std::vector<int64_t>>{},
          py::arg("floats") = std::map<std::string, double>{}, py::arg("expected_shape") = Shape{})
      .def(
          "add_conv2d",
          [](Graph& g, int x, const std::string& source, const std::string& name, int state_version,
             const IntArray& config, const Int8Array& weight, const FloatArray& weight_scale,
             const IntArray& weight_zero_point, int weight_axis, std::optional<FloatArray> bias, bool relu,
             const std::string& out_dtype, float out_scale, int out_zero_point, const Shape& expected_shape) {
            const ConvConfig c = decode_conv_config_at(source, state_version, config);
            if (c.spatial_dims != 2) throw std::invalid_argument(source + ": conv2d needs 2 spatial dims");
            if (c.transpose) throw std::invalid_argument(source + ": transposed conv is not supported by conv2d");
            Node n;
            n.ints = {{"stride", c.stride}, {"padding", c.padding}, {"dilation", c.dilation},
                      {"groups", {c.groups}}, {"relu", {relu}}};
            return add_weighted_layer(g, "conv2d", x, source, name, weight, weight_scale, weight_zero_point,
                                      weight_axis, bias, std::move(n),
                                      make_output(name, out_dtype, out_scale, out_zero_point), expected_shape);
          },
          py::arg("x"), py::arg("source"), py::arg("name"), py::arg("state_version"), py::arg("config"),
          py::arg("weight"), py::arg("weight_scale"), py::arg("weight_zero_point"), py::arg("weight_axis"),
          py::arg("bias"), py::arg("relu"), py::arg("out_dtype"), py::arg("out_scale"), py::arg("out_zero_point"),
          py::arg("expected_shape") = Shape{})
      .def(
          "add_conv_transpose2d",
          [](Graph& g, int x, const std::string& source, const std::string& name, int state_version,
             const IntArray& config, const Int8Array& weight, const FloatArray& weight_scale,
             const IntArray& weight_zero_point, int weight_axis, std::optional<FloatArray> bias, bool relu,
             const std::string& out_dtype, float out_scale, int out_zero_point, const Shape& expected_shape) {
            const ConvConfig c = decode_conv_config_at(source, state_version, config);
            if (c.spatial_dims != 2 || !c.transpose) {
              throw std::invalid_argument(source + ": conv_transpose2d needs a transposed 2-D conv configuration");
            }
            if (weight_axis >= 0) {
              throw std::invalid_argument(source + ": per-channel weights of a transposed conv are not supported "
                                                   "(PyTorch does not produce them either)");
            }
            if (weight.ndim() != 4) throw std::invalid_argument(source + ": conv_transpose2d weight must be 4-D");
            Node n;
            n.ints = {{"stride", c.stride}, {"padding", c.padding}, {"output_padding", c.output_padding},
                      {"dilation", c.dilation}, {"groups", {c.groups}}, {"relu", {relu}}};
            return add_weighted_layer(g, "conv_transpose2d", x, source, name, weight, weight_scale, weight_zero_point,
                                      weight_axis, bias, std::move(n),
                                      make_output(name, out_dtype, out_scale, out_zero_point), expected_shape,
                                      weight.shape(1) * c.groups);
          },
          py::arg("x"), py::arg("source"), py::arg("name"), py::arg("state_version"), py::arg("config"),
          py::arg("weight"), py::arg("weight_scale"), py::arg("weight_zero_point"), py::arg("weight_axis"),
          py::arg("bias"), py::arg("relu"), py::arg("out_dtype"), py::arg("out_scale"), py::arg("out_zero_point"),
          py::arg("expected_shape") = Shape{})
      .def(
          "add_linear",
          [](Graph& g, int x, const std::string& source, const std::string& name, const Int8Array& weight,
             const FloatArray& weight_scale, const IntArray& weight_zero_point, int weight_axis,
             std::optional<FloatArray> bias, bool relu, const std::string& out_dtype, float out_scale,
             int out_zero_point, const Shape& expected_shape) {
            Node n;
            n.ints = {{"relu", {relu}}};
            return add_weighted_layer(g, "linear", x, source, name, weight, weight_scale, weight_zero_point,
                                      weight_axis, bias, std::move(n),
                                      make_output(name, out_dtype, out_scale, out_zero_point), expected_shape);
          },
          py::arg("x"), py::arg("source"), py::arg("name"), py::arg("weight"), py::arg("weight_scale"),
          py::arg("weight_zero_point"), py::arg("weight_axis"), py::arg("bias"), py::arg("relu"),
          py::arg("out_dtype"), py::arg("out_scale"), py::arg("out_zero_point"), py::arg("expected_shape") = Shape{})
      .def(
          "add_batch_norm2d",
          [](Graph& g, int x, const std::string& source, const std::string& name, const FloatArray& weight,
             const FloatArray& bias, const FloatArray& mean, const FloatArray& var, double eps, bool relu,
             const std::string& out_dtype, float out_scale, int out_zero_point, const Shape& expected_shape) {
            const int64_t c = weight.size();
            if (bias.size() != c || mean.size() != c || var.size() != c) {
              throw std::invalid_argument(source + ": batch norm weight, bias, mean and var differ in length");
            }
            Node n;
            n.op = "batch_norm2d";
            n.source = source;
            n.inputs = {x};
            n.ints = {{"relu", {relu}}};
            n.floats = {{"eps", eps}};
            n.params = add_batch_norm_params(g, name, c, weight.data(), bias.data(), mean.data(), var.data());
            return g.add_node(std::move(n), make_output(name, out_dtype, out_scale, out_zero_point), expected_shape);
          },
          py::arg("x"), py::arg("source"), py::arg("name"), py::arg("weight"), py::arg("bias"), py::arg("mean"),
          py::arg("var"), py::arg("eps"), py::arg("relu"), py::arg("out_dtype"), py::arg("out_scale"),
          py::arg("out_zero_point"), py::arg("expected_shape") = Shape{})
      .def("mark_output", &Graph::mark_output, py::arg("value"))
      .def("script", &emit_tvmscript, py::arg("func_name") = "main", "The module as Relax TVMScript text.")
      .def("exported_params",
           [](py::object self) {
             const Graph& g = self.cast<const Graph&>();
             py::list out;
             for (const ExportedParam& p : exported_params(g)) out.append(py::make_tuple(p.name, param_view(p, self)));
             return out;
           })
      .def("value", [](const Graph& g, int id) { return value_info(g.value(id)); }, py::arg("id"))
      .def("values", [](const Graph& g) {
        py::list out;
        for (const Value& v : g.values()) out.append(value_info(v));
        return out;
      })
      .def("nodes", [](const Graph& g) {
        py::list out;
        for (const Node& n : g.nodes()) out.append(node_info(g, n));
        return out;
      })
      .def_property_readonly("inputs", &Graph::inputs)
      .def_property_readonly("outputs", &Graph::outputs)
      .def("serialize", [](const Graph& g) { return py::bytes(serialize_graph(g)); })
      .def_static("deserialize", [](const py::bytes& b) { return std::make_shared<Graph>(deserialize_graph(b)); });

  bind_fixed_point(m);
  m.def("cpu_has_avx2", &cpu_has_avx2, "Whether this CPU has AVX2 and FMA.");
  m.def("peak_madd_gmacs", &peak_madd_gmacs, py::arg("seconds") = 0.2,
        "Measured GMAC/s of a register-only vpmaddwd + vpaddd loop on one core: the int16 GEMM's ceiling.");
  m.def("peak_u8s8_gmacs", &peak_u8s8_gmacs, py::arg("seconds") = 0.2,
        "Measured GMAC/s of a register-only vpmaddubsw + vpmaddwd + vpaddd loop on one core: the u8s8 GEMM's ceiling.");
  m.def("default_isa", [] { return std::string(isa_name(default_isa())); },
        "The ISA the runtime uses by default (QNNPY_ISA=scalar|avx2 overrides).");

  py::class_<Executor>(m, "Executor")
      .def(py::init([](std::shared_ptr<Graph> g, const std::string& profile, const std::string& isa, int threads) {
             return std::make_unique<Executor>(g, parse_profile(profile), isa.empty() ? default_isa() : parse_isa(isa),
                                               threads);
           }),
           py::arg("graph"), py::arg("profile") = "int32_bias", py::arg("isa") = "", py::arg("threads") = 1)
      .def_property_readonly("profile", [](const Executor& e) { return std::string(profile_name(e.profile())); })
      .def_property_readonly("isa", [](const Executor& e) { return std::string(isa_name(e.isa())); })
      .def("node_seconds", &Executor::node_seconds, "Wall time of each node in the last run (node order).")
      .def("node_kernels", &Executor::node_kernels,
           "The kernel each conv/linear node used in the last run (node order; '' for other nodes).")
      .def(
          "run",
          [](Executor& e, const std::vector<FloatArray>& inputs, bool capture) {
            const Graph& g = e.graph();
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
              outs = e.run(ptrs, capture ? &captured : nullptr);
            }
            py::list out_list;
            for (const auto& t : outs) out_list.append(host_to_numpy(t));
            py::dict cap;
            for (const auto& kv : captured) cap[py::str(kv.first)] = host_to_numpy(kv.second);
            return py::make_tuple(out_list, cap);
          },
          py::arg("inputs"), py::arg("capture") = false,
          "Run on float32 NCHW inputs; returns (outputs, {value name: tensor} when capture).");
}
