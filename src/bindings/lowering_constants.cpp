// Bindings that expose the runtime's own numbers to the TVM integer lowering
// (qnnpy/tvm_bridge/lowering): requantization constants of conv/linear layers,
// the 256-entry tables of one-input ops, per-channel tables of batch norm and the
// memory layout PyTorch gives each value. One definition: the lowering asks the
// runtime instead of recomputing its formulas.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "ir/graph.h"
#include "kernels/kernels.h"
#include "runtime/buffer.h"
#include "runtime/node_runner.h"
#include "runtime/ops/unary_tables.h"
#include "runtime/prepared_layer.h"
#include "runtime/profile.h"
#include "runtime/value_layouts.h"

namespace py = pybind11;
namespace qnnpy::bindings {
namespace {

template <class T>
py::array_t<T> to_numpy(const T* data, size_t n) {
  py::array_t<T> a(static_cast<py::ssize_t>(n));
  std::copy(data, data + n, a.mutable_data());
  return a;
}

py::array_t<uint8_t> table_array(const ByteTable& t) { return to_numpy(t.data(), t.size()); }

const Node& node_at(const Graph& g, int index) {
  if (index < 0 || index >= static_cast<int>(g.nodes().size())) {
    throw std::out_of_range("lowering: node index " + std::to_string(index) + " out of range");
  }
  return g.nodes()[index];
}

// Requantization of a conv2d / linear node under `profile` (prepared_layer.cpp):
// y = clamp(cvtps(fl(fl(float(acc + ibias[c]) + fbias[c]) * mult[c])) + zp, lo, hi), or under
// fixed_point y = clamp(MultiplyByQuantizedMultiplier(acc + ibias[c], M0[c], shift[c]) + zp, lo, hi)
// (mult and fbias then empty), or in oneDNN's order (w_scale not empty; kernels.h RequantParams)
// y = cvtps(clamp(fl(fl(fl(fl(fl(float(acc + ibias[c]) * src_scale) * w_scale[c]) + fbias[c]) * mult[c]) + zp), lo, hi)).
// "profile" names the profile the layer resolves to (layer_profile: an x86 profile's layers are onednn's or fbgemm's).
py::dict layer_requantization(const Graph& g, int index, const std::string& profile) {
  const Node& n = node_at(g, index);
  const Profile resolved = layer_profile(parse_profile(profile), g, n);
  const PreparedLayer L = prepare_layer(g, n, resolved);
  py::dict d;
  d["profile"] = profile_name(resolved);
  d["w_scale"] = to_numpy(L.w_scale.data(), L.w_scale.size());
  d["src_scale"] = L.src_scale;
  d["mult"] = to_numpy(L.mult.data(), L.mult.size());
  d["fbias"] = to_numpy(L.fbias.data(), L.fbias.size());
  d["ibias"] = to_numpy(L.ibias.data(), L.ibias.size());
  d["fixed_multiplier"] = to_numpy(L.fixed_multiplier.data(), L.fixed_multiplier.size());
  d["fixed_shift"] = to_numpy(L.fixed_shift.data(), L.fixed_shift.size());
  d["zp"] = L.zp;
  d["lo"] = L.lo;
  d["hi"] = L.hi;
  return d;
}

// The vector-lane and scalar-tail tables of a one-input table op (unary_tables.cpp), as its
// runner holds them.
py::tuple unary_node_tables(const Graph& g, int index, const std::string& profile) {
  const Node& n = node_at(g, index);
  const NodeRunner runner(g, n, parse_profile(profile));
  const auto* table_op = dynamic_cast<const TableRunner*>(&runner.prepared());
  if (!table_op) throw std::invalid_argument("lowering: node " + std::to_string(index) + " (" + n.op + ") is not a table op");
  return py::make_tuple(table_array(table_op->tables().vector), table_array(table_op->tables().tail));
}

py::tuple requantize_value_tables(bool is_signed, float in_scale, int32_t in_zp, float out_scale, int32_t out_zp,
                                  int32_t lo, int32_t hi) {
  const UnaryTables t = requantize_tables(is_signed, in_scale, in_zp, out_scale, out_zp, lo, hi);
  return py::make_tuple(table_array(t.vector), table_array(t.tail));
}

// out[c][b] = the node's output at channel c for the raw input byte b, for a node whose
// output element depends on its input element and channel only (batch norm): the
// node's runner is run on inputs whose pixels cycle through the 256 bytes.
py::array_t<uint8_t> channel_tables(const Graph& g, int index, const std::string& profile, const std::string& op) {
  const Node& n = node_at(g, index);
  if (n.op != op || n.inputs.size() != 1) {
    throw std::invalid_argument("lowering: node " + std::to_string(index) + " (" + n.op + ") has no channel tables");
  }
  const Value& x = g.value(n.inputs[0]);
  const int64_t c = x.shape.at(1), pixels = num_elements(x.shape) / c;
  py::array_t<uint8_t> out({static_cast<py::ssize_t>(c), py::ssize_t{256}});
  uint8_t* t = out.mutable_data();
  std::vector<Buffer> values(g.values().size());
  const NodeRunner runner(g, n, parse_profile(profile));
  for (int64_t first = 0; first < 256; first += pixels) {
    Buffer& in = values[n.inputs[0]];
    in.q.resize(static_cast<size_t>(pixels * c));
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t ch = 0; ch < c; ++ch) in.q[p * c + ch] = static_cast<uint8_t>((first + p) % 256);  // NHWC
    runner.run(g, n, values, scalar_kernels(), 1);
    const std::vector<uint8_t>& y = values[n.output].q;
    for (int64_t p = 0; p < pixels && first + p < 256; ++p)
      for (int64_t ch = 0; ch < c; ++ch) t[ch * 256 + first + p] = y[p * c + ch];
  }
  return out;
}

// The layout flags (Buffer::torch_channels_last, torch_dense) of every node output.
py::dict layout_flags(const Graph& g, const std::string& profile) {
  const std::vector<Buffer> values = value_layouts(g, parse_profile(profile));
  py::dict flags;
  for (const Node& n : g.nodes()) {
    const Buffer& y = values[n.output];
    flags[py::str(g.value(n.output).name)] = py::make_tuple(y.torch_channels_last, y.torch_dense);
  }
  return flags;
}

// A float32 runtime-only param of a node (e.g. "bias_float", the float bias fbgemm adds).
py::array_t<float> float_node_param(const Graph& g, int index, const std::string& role) {
  const Node& n = node_at(g, index);
  if (!n.has_param(role)) return py::array_t<float>(0);
  const Param& p = g.node_param(n, role);
  if (p.dtype != DType::Float32) throw std::invalid_argument("lowering: param " + role + " is not float32");
  return to_numpy(p.data<float>(), p.bytes.size() / sizeof(float));
}

}  // namespace

void bind_lowering(py::module_& m) {
  m.def("lowering_layer_requantization", &layer_requantization, py::arg("graph"), py::arg("node"), py::arg("profile"),
        "Requantization constants of a conv2d/linear node: the profile it resolves to, mult, fbias, ibias, "
        "fixed_multiplier, fixed_shift, w_scale (per channel), src_scale, zp, lo, hi.");
  m.def("lowering_unary_tables", &unary_node_tables, py::arg("graph"), py::arg("node"), py::arg("profile"),
        "(vector-lane table, scalar-tail table) of a one-input node, 256 entries indexed by the raw byte.");
  m.def("lowering_requantize_tables", &requantize_value_tables, py::arg("is_signed"), py::arg("in_scale"),
        py::arg("in_zp"), py::arg("out_scale"), py::arg("out_zp"), py::arg("lo"), py::arg("hi"),
        "(vector-lane table, scalar-tail table) requantizing one 8-bit value as PyTorch's qcat does.");
  m.def("lowering_channel_tables", &channel_tables, py::arg("graph"), py::arg("node"), py::arg("profile"),
        py::arg("op"), "(channels, 256) table of a node whose output depends on its input value and channel only.");
  m.def("lowering_layout_flags", &layout_flags, py::arg("graph"), py::arg("profile"),
        "{value name: (torch_channels_last, torch_dense)} for every node output.");
  m.def("lowering_float_node_param", &float_node_param, py::arg("graph"), py::arg("node"), py::arg("role"),
        "A float32 param of a node by role (empty when the node has none).");
  m.def("lowering_adaptive_multiplier",
        [](const std::string& rule, float in_scale, float out_scale, int64_t kh, int64_t kw, int64_t kd) {
          AdaptivePoolParams p{AvgPoolRule::FbgemmNhwc, in_scale, out_scale, 0, 0, 0};
          if (rule == "fbgemm_nchw") p.rule = AvgPoolRule::FbgemmNchw;
          else if (rule == "qnnpack") p.rule = AvgPoolRule::Qnnpack;
          else if (rule != "fbgemm_nhwc") throw std::invalid_argument("lowering: unknown adaptive pool rule " + rule);
          return adaptive_multiplier3d(p, kd, kh, kw);
        },
        py::arg("rule"), py::arg("in_scale"), py::arg("out_scale"), py::arg("kh"), py::arg("kw"), py::arg("kd") = 1,
        "Multiplier of an adaptive average pool window (kd x kh x kw; 2-D: kd = 1) under rule fbgemm_nhwc, "
        "fbgemm_nchw or qnnpack.");
  m.def("lowering_avg_pool2d_multipliers",
        [](bool nhwc, int64_t divisor) {
          return avg_pool2d_multipliers(nhwc ? AvgPool2dRule::Nhwc : AvgPool2dRule::Nchw, divisor);
        },
        py::arg("nhwc"), py::arg("divisor"), "(vector-channel, other-channel) multipliers of avg_pool2d for a divisor.");
}

}  // namespace qnnpy::bindings
