#include <memory>

#include "bindings/bindings.h"
#include "bindings/numpy_views.h"
#include "emit/tvmscript.h"
#include "ir/serialize.h"
#include "layer_import/normalization_node.h"
#include "layer_import/float_layer.h"
#include "ops/op_def.h"
#include "runtime/packed_weights.h"

namespace qnnpy::bindings {
namespace {

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

// The facts of one op definition a test or a tool may need.
py::dict op_info(const OpDef& op) {
  py::dict d;
  d["name"] = op.name;
  d["kind"] = op_kind_name(op.kind);
  d["has_rule"] = op.infer != nullptr;
  d["has_emission"] = op.emit != nullptr;
  d["has_runner"] = op.make_runner != nullptr;
  d["not_runnable"] = op.not_runnable ? py::object(py::str(op.not_runnable)) : py::object(py::none());
  d["bit_exact_float_output"] = op.bit_exact_float_output;
  d["quantizes_input"] = op.quantizes_input;
  return d;
}

// A conv / linear layer from Python's arguments.
LayerNode layer_node(int x, const std::string& source, const std::string& name, const Int8Array& weight,
                     const FloatArray& weight_scale, const IntArray& weight_zero_point, int weight_axis,
                     const FloatSpan* bias, bool relu, const std::string& out_dtype, float out_scale, int out_zero_point,
                     const Shape& expected_shape) {
  LayerNode layer;
  layer.input = x;
  layer.source = source;
  layer.name = name;
  layer.weight.data = weight.data();
  layer.weight.shape = shape_of(weight);
  layer.weight.q = make_qparams(weight_scale, weight_zero_point, weight_axis);
  layer.bias = bias;
  layer.relu = relu;
  layer.output = make_output(name, out_dtype, out_scale, out_zero_point);
  layer.expected_shape = expected_shape;
  return layer;
}

// add_conv2d and add_conv_transpose2d: the same arguments, one builder each.
template <int (*Add)(Graph&, LayerNode, int, const std::vector<int64_t>&)>
int add_conv(Graph& g, int x, const std::string& source, const std::string& name, int state_version, const IntArray& config,
             const Int8Array& weight, const FloatArray& weight_scale, const IntArray& weight_zero_point, int weight_axis,
             std::optional<FloatArray> bias, bool relu, const std::string& out_dtype, float out_scale, int out_zero_point,
             const Shape& expected_shape) {
  const FloatSpan b = bias ? span_of(*bias) : FloatSpan{};
  return Add(g, layer_node(x, source, name, weight, weight_scale, weight_zero_point, weight_axis, bias ? &b : nullptr, relu,
                           out_dtype, out_scale, out_zero_point, expected_shape),
             state_version, to_vector<int64_t>(config));
}

// A param of a plain dtype (float32, int64, int32 or bool) holding `array`'s values.
Param plain_param(const std::string& name, const py::array& array, bool exported) {
  const py::array a = py::array::ensure(array, py::array::c_style);
  if (!a) throw py::error_already_set();
  Param p;
  p.name = name;
  p.dtype = dtype_from_name(py::str(a.dtype()).cast<std::string>());
  if (!is_plain_dtype(p.dtype)) throw std::invalid_argument("param '" + name + "': dtype " + dtype_name(p.dtype) + " is not plain");
  p.shape = shape_of(a);
  p.bytes.assign(static_cast<const uint8_t*>(a.data()), static_cast<const uint8_t*>(a.data()) + a.nbytes());
  p.exported = exported;
  return p;
}

}  // namespace

void bind_graph(py::module_& m) {
  m.def(
      "held_weight_bytes",
      [](const std::vector<std::shared_ptr<Graph>>& graphs) {
        std::vector<const Graph*> plain;
        for (const auto& g : graphs) plain.push_back(g.get());
        const WeightBytes held = held_weight_bytes(plain);
        return py::dict(py::arg("params") = held.params, py::arg("packed") = held.packed);
      },
      py::arg("graphs"),
      "What the weights take in memory: {'params': the bytes of the param buffers the graphs hold, each shared "
      "buffer once; 'packed': the bytes of the runtime's packed weights alive in this process}.");
  m.def("op_names", [] {
    std::vector<std::string> names;
    for (const OpDef& op : op_table()) names.push_back(op.name);
    return names;
  }, "The name of every IR op, in the order of the op table.");
  m.def("op_info", [](const std::string& name) {
    Node n;
    n.op = name;
    n.source = "op_info";
    return op_info(op_def(n));
  }, py::arg("name"), "The facts of one op's definition: kind, whether it has a rule, an emission and a runner, and whether "
        "its float output (Float kind) equals PyTorch's bit for bit, whether it is a quantized layer that quantizes its "
        "float input inside.");

  const auto conv_args = std::make_tuple(
      py::arg("x"), py::arg("source"), py::arg("name"), py::arg("state_version"), py::arg("config"), py::arg("weight"),
      py::arg("weight_scale"), py::arg("weight_zero_point"), py::arg("weight_axis"), py::arg("bias"), py::arg("relu"),
      py::arg("out_dtype"), py::arg("out_scale"), py::arg("out_zero_point"), py::arg("expected_shape") = Shape{});

  py::class_<Graph, std::shared_ptr<Graph>> graph(m, "Graph");
  graph.def(py::init<>())
      .def(
          "add_input",
          [](Graph& g, const std::string& name, const Shape& shape, const std::string& dtype) {
            return g.add_input(name, shape, dtype_from_name(dtype));
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "float32",
          "An input of the function: float32, or int64 / int32 indices (of an embedding).")
      .def(
          "add_node",
          [](Graph& g, const std::string& op, const std::vector<int>& inputs, const std::string& source,
             const std::string& out_name, const std::string& out_dtype, std::optional<float> out_scale,
             std::optional<int> out_zero_point, const std::map<std::string, std::vector<int64_t>>& ints,
             const std::map<std::string, double>& floats, const Shape& expected_shape,
             const std::map<std::string, py::array>& params, bool export_params) {
            Node n;
            n.op = op;
            n.source = source;
            n.inputs = inputs;
            n.ints = ints;
            n.floats = floats;
            for (const auto& [role, array] : params) n.params[role] = g.add_param(plain_param(out_name + "_" + role, array, export_params));
            return g.add_node(std::move(n), make_output(out_name, out_dtype, out_scale, out_zero_point), expected_shape);
          },
          py::arg("op"), py::arg("inputs"), py::arg("source"), py::arg("out_name"), py::arg("out_dtype"),
          py::arg("out_scale") = py::none(), py::arg("out_zero_point") = py::none(),
          py::arg("ints") = std::map<std::string, std::vector<int64_t>>{},
          py::arg("floats") = std::map<std::string, double>{}, py::arg("expected_shape") = Shape{},
          py::arg("params") = std::map<std::string, py::array>{}, py::arg("export_params") = true,
          "Add a node. `params` maps roles to arrays (float32, int64, int32 or bool, no qparams) that become params "
          "named <out_name>_<role>: function parameters of the Relax module, or with export_params=False runtime-only "
          "data (a scalar constant is then inlined).")
      .def("rename_value", &Graph::rename_value, py::arg("value"), py::arg("name"),
           "Give a value a new name (made a unique identifier), e.g. an output its key in the model's output dict; "
           "returns the name it got.");
  std::apply([&](auto... args) { graph.def("add_conv2d", &add_conv<add_conv2d_node>, args...); }, conv_args);
  std::apply([&](auto... args) { graph.def("add_conv_transpose2d", &add_conv<add_conv_transpose2d_node>, args...); }, conv_args);
  std::apply([&](auto... args) { graph.def("add_conv3d", &add_conv<add_conv3d_node>, args...); }, conv_args);
  graph
      .def(
          "add_linear",
          [](Graph& g, int x, const std::string& source, const std::string& name, const Int8Array& weight,
             const FloatArray& weight_scale, const IntArray& weight_zero_point, int weight_axis,
             std::optional<FloatArray> bias, bool relu, const std::string& out_dtype, float out_scale,
             int out_zero_point, const Shape& expected_shape) {
            const FloatSpan b = bias ? span_of(*bias) : FloatSpan{};
            return add_linear_node(g, layer_node(x, source, name, weight, weight_scale, weight_zero_point, weight_axis,
                                                 bias ? &b : nullptr, relu, out_dtype, out_scale, out_zero_point,
                                                 expected_shape));
          },
          py::arg("x"), py::arg("source"), py::arg("name"), py::arg("weight"), py::arg("weight_scale"),
          py::arg("weight_zero_point"), py::arg("weight_axis"), py::arg("bias"), py::arg("relu"),
          py::arg("out_dtype"), py::arg("out_scale"), py::arg("out_zero_point"), py::arg("expected_shape") = Shape{})
      .def(
          "add_batch_norm2d",
          [](Graph& g, int x, const std::string& source, const std::string& name, const FloatArray& weight,
             const FloatArray& bias, const FloatArray& mean, const FloatArray& var, double eps, bool relu,
             const std::string& out_dtype, float out_scale, int out_zero_point, const Shape& expected_shape) {
            LayerNode layer;
            layer.input = x;
            layer.source = source;
            layer.name = name;
            layer.relu = relu;
            layer.output = make_output(name, out_dtype, out_scale, out_zero_point);
            layer.expected_shape = expected_shape;
            return add_batch_norm2d_node(g, std::move(layer),
                                         {span_of(weight), span_of(bias), span_of(mean), span_of(var), eps});
          },
          py::arg("x"), py::arg("source"), py::arg("name"), py::arg("weight"), py::arg("bias"), py::arg("mean"),
          py::arg("var"), py::arg("eps"), py::arg("relu"), py::arg("out_dtype"), py::arg("out_scale"),
          py::arg("out_zero_point"), py::arg("expected_shape") = Shape{})
      .def(
          "add_normalization",
          [](Graph& g, const std::string& op, int x, const std::string& source, const std::string& name,
             const FloatArray& weight, const FloatArray& bias, const std::map<std::string, std::vector<int64_t>>& ints,
             double eps, const std::string& out_dtype, std::optional<float> out_scale, std::optional<int> out_zero_point,
             const Shape& expected_shape) {
            Node n;
            n.op = op;
            n.source = source;
            n.inputs = {x};
            n.ints = ints;
            n.floats = {{"eps", eps}};
            const std::vector<float> w(weight.data(), weight.data() + weight.size());
            const std::vector<float> b(bias.data(), bias.data() + bias.size());
            return add_normalization_node(g, std::move(n), shape_of(weight), w, b,
                                          make_output(name, out_dtype, out_scale, out_zero_point), expected_shape);
          },
          py::arg("op"), py::arg("x"), py::arg("source"), py::arg("name"), py::arg("weight"), py::arg("bias"),
          py::arg("ints"), py::arg("eps"), py::arg("out_dtype"), py::arg("out_scale") = py::none(),
          py::arg("out_zero_point") = py::none(), py::arg("expected_shape") = Shape{},
          "A normalization with float32 weight and bias: quantized_layer_norm, quantized_group_norm (output qparams "
          "given), or float_layer_norm (out_dtype float32, no qparams).")
      .def(
          "add_float_layer",
          [](Graph& g, const std::string& op, int x, const std::string& source, const std::string& name,
             const py::array& weight, const FloatArray& weight_scale, const IntArray& weight_zero_point, int weight_axis,
             std::optional<FloatArray> bias, const std::map<std::string, std::vector<int64_t>>& ints,
             const Shape& expected_shape) {
            const bool is_float = py::isinstance<py::array_t<float>>(weight);
            if (!is_float && !py::isinstance<py::array_t<int8_t>>(weight)) {
              throw std::invalid_argument(op + " (" + source + "): weight must be an int8 or float32 array");
            }
            const py::array w_array = is_float ? py::array(FloatArray::ensure(weight)) : py::array(Int8Array::ensure(weight));
            WeightView w;
            w.data = is_float ? nullptr : static_cast<const int8_t*>(w_array.data());
            w.shape = shape_of(w_array);
            if (!is_float) w.q = make_qparams(weight_scale, weight_zero_point, weight_axis);
            if (bias && bias->size() != (w.shape.empty() ? 0 : w.shape[0])) {
              throw std::invalid_argument(op + " (" + source + "): bias has " + std::to_string(bias->size()) +
                                          " values for " + shape_str(w.shape) + " weight");
            }
            return add_float_layer_node(g, op, x, source, name, w,
                                        is_float ? static_cast<const float*>(w_array.data()) : nullptr,
                                        bias ? bias->data() : nullptr, ints, expected_shape);
          },
          py::arg("op"), py::arg("x"), py::arg("source"), py::arg("name"), py::arg("weight"), py::arg("weight_scale"),
          py::arg("weight_zero_point"), py::arg("weight_axis"), py::arg("bias"), py::arg("ints"),
          py::arg("expected_shape") = Shape{},
          "A float_conv2d / float_linear node: int8 weight with its qparams (or float32 weight, qparams ignored), float32 bias, float32 output.")
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
      .def("share_params", &Graph::share_params, py::arg("other"),
           "Makes each param read the buffer of other's param of the same name, dtype, shape and values; returns how "
           "many it shares.")
      .def("release_packed_params", &release_packed_params, py::arg("why"),
           "Frees the params that only runners which packed them read (runtime/packed_weights.h); returns the bytes.")
      .def("serialize", [](const Graph& g) { return py::bytes(serialize_graph(g)); })
      .def_static("deserialize", [](const py::bytes& b) { return std::make_shared<Graph>(deserialize_graph(b)); });
}

}  // namespace qnnpy::bindings
