#include "runtime/prepared_layer.h"

#include <stdexcept>

namespace qnnpy {
namespace {

void set_requantization(const Graph& g, const Node& n, Profile profile, PreparedLayer& L) {
  const Value& x = g.value(n.inputs[0]);
  const Value& y = g.value(n.output);
  const Param& w = g.node_param(n, "weight");
  const float s_x = x.q.scale[0], s_y = y.q.scale[0];
  const bool per_channel = w.q.per_channel();
  L.ibias.assign(L.cout, 0);
  L.fbias.assign(L.cout, 0.0f);
  L.mult.resize(L.cout);
  const float inv_s_y = 1.0f / s_y;
  for (int64_t c = 0; c < L.cout; ++c) {
    const float s_w = w.q.scale[per_channel ? c : 0];
    if (profile == Profile::Int32Bias) {
      L.mult[c] = (s_w * s_x) * inv_s_y;  // QNNPACK generate_requantization_scales
    } else {
      const float a = s_x * s_w;         // fbgemm act_times_w_scale
      L.mult[c] = a / s_y;
      if (n.has_param("bias_float")) {
        const float b = g.node_param(n, "bias_float").data<float>()[c];
        // fbgemm's AVX2 output pipeline: per-tensor multiplies by a double-computed reciprocal.
        L.fbias[c] = per_channel ? b / a : b * static_cast<float>(1.0 / static_cast<double>(a));
      }
    }
  }
  if (profile == Profile::Int32Bias && n.has_param("bias")) {
    const int32_t* b = g.node_param(n, "bias").data<int32_t>();
    L.ibias.assign(b, b + L.cout);
  }
  L.zp = y.q.zero_point[0];
  L.hi = dtype_max(y.dtype);
  L.lo = (n.ints.count("relu") && n.int_attr("relu")) ? L.zp : dtype_min(y.dtype);
  L.input_zp = x.q.zero_point[0];
}

// B[k][j] for group `grp` of a conv weight (OIHW), k ordered (ky, kx, ic), minus the weight zero point.
std::vector<int16_t> conv_b_matrix(const Param& w, const PreparedLayer& L, int64_t grp) {
  std::vector<int16_t> b(L.k * L.cout_per_group);
  const int8_t* wd = w.data<int8_t>();
  for (int64_t j = 0; j < L.cout_per_group; ++j) {
    const int64_t oc = grp * L.cout_per_group + j;
    const int32_t zp = w.q.zero_point[w.q.per_channel() ? oc : 0];
    for (int64_t ky = 0; ky < L.kh; ++ky)
      for (int64_t kx = 0; kx < L.kw; ++kx)
        for (int64_t ic = 0; ic < L.cin_per_group; ++ic) {
          const int64_t k = (ky * L.kw + kx) * L.cin_per_group + ic;
          b[k * L.cout_per_group + j] =
              static_cast<int16_t>(wd[((oc * L.cin_per_group + ic) * L.kh + ky) * L.kw + kx] - zp);
        }
  }
  return b;
}

}  // namespace

PreparedLayer prepare_layer(const Graph& g, const Node& n, Profile profile) {
  PreparedLayer L;
  const Param& w = g.node_param(n, "weight");
  if (n.op == "conv2d") {
    L.cout = w.shape[0];
    L.groups = n.int_attr("groups");
    L.cin_per_group = w.shape[1];
    L.cout_per_group = L.cout / L.groups;
    L.kh = w.shape[2];
    L.kw = w.shape[3];
    const auto &st = n.ints_attr("stride"), &pd = n.ints_attr("padding"), &dl = n.ints_attr("dilation");
    L.sh = st[0], L.sw = st[1], L.ph = pd[0], L.pw = pd[1], L.dh = dl[0], L.dw = dl[1];
  } else if (n.op == "linear") {
    L.cout = L.cout_per_group = w.shape[0];
    L.cin_per_group = w.shape[1];
  } else {
    throw std::logic_error("prepare_layer: " + n.op + " has no weights");
  }
  L.k = L.kh * L.kw * L.cin_per_group;
  L.kp = (L.k + 1) / 2 * 2;
  L.depthwise = n.op == "conv2d" && L.cin_per_group == 1 && L.cout_per_group == 1;
  if (L.depthwise) {
    L.depthwise_weights.resize(L.kh * L.kw * L.cout);
    const int8_t* wd = w.data<int8_t>();
    for (int64_t c = 0; c < L.cout; ++c) {
      const int32_t zp = w.q.zero_point[w.q.per_channel() ? c : 0];
      for (int64_t t = 0; t < L.kh * L.kw; ++t) L.depthwise_weights[t * L.cout + c] = static_cast<int16_t>(wd[c * L.kh * L.kw + t] - zp);
    }
  } else {
    const int64_t per_group = packed_b_size(L.k, L.cout_per_group);
    L.packed_b.resize(per_group * L.groups);
    for (int64_t grp = 0; grp < L.groups; ++grp) {
      std::vector<int16_t> b = conv_b_matrix(w, L, grp);  // linear: kh = kw = 1, the same (k, j) layout
      pack_b(b.data(), L.k, L.cout_per_group, L.packed_b.data() + grp * per_group);
    }
  }
  set_requantization(g, n, profile, L);
  return L;
}

}  // namespace qnnpy
