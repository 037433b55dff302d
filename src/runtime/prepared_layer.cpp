#include "runtime/prepared_layer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/fixed_point.h"

namespace qnnpy {
namespace {

// fixed_point: M0[c] and shift[c] of m[c] (kernels/fixed_point.h).
void set_fixed_point_multipliers(const Node& n, const Param& w, float s_x, float s_y, PreparedLayer& L) {
  L.fixed_multiplier.resize(L.cout);
  L.fixed_shift.resize(L.cout);
  for (int64_t c = 0; c < L.cout; ++c) {
    const float s_w = w.q.scale[w.q.per_channel() ? c : 0];
    try {
      const QuantizedMultiplier q = quantize_multiplier(conv_real_multiplier(s_x, s_w, s_y));
      L.fixed_multiplier[c] = q.multiplier;
      L.fixed_shift[c] = q.shift;
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(n.op + " (" + n.source + "), output channel " + std::to_string(c) +
                                  ", profile fixed_point: " + e.what());
    }
  }
}

// int32_bias, qnnpack and fbgemm: the float multipliers (and fbgemm's float bias), per output channel.
void set_float_multipliers(const Graph& g, const Node& n, Profile profile, const Param& w, float s_x, float s_y,
                           PreparedLayer& L) {
  const bool per_channel = w.q.per_channel();
  L.fbias.assign(L.cout, 0.0f);
  L.mult.resize(L.cout);
  const float inv_s_y = 1.0f / s_y;
  for (int64_t c = 0; c < L.cout; ++c) {
    const float s_w = w.q.scale[per_channel ? c : 0];
    if (profile != Profile::Fbgemm) {
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
}

// The reciprocal of a scale as PyTorch's oneDNN glue passes it (float(1.0 / double(s))) and ideep and oneDNN
// invert it again in float, `times` reciprocals in all (aten/src/ATen/native/quantized/cpu/qconv.cpp,
// ideep's attr scales, oneDNN's dst-scale inversion in its jit post-ops).
float reciprocal_chain(float s, int times) {
  float v = static_cast<float>(1.0 / static_cast<double>(s));
  for (int i = 1; i < times; ++i) v = 1.0f / v;
  return v;
}

// onednn: the scales as oneDNN applies them: the input scale and the weight scale per channel separately,
// then the float bias, then the reciprocal of the output scale (kernels.h, RequantParams).
// onednn_amx: oneDNN's AMX micro-kernels multiply by fl(S_x * S_w[c]) at once (src_scale 1 keeps the formula),
// its depthwise kernel (brdgmm) as onednn.
void set_onednn_scales(const Graph& g, const Node& n, Profile profile, const Param& w, float s_x, float s_y,
                       PreparedLayer& L) {
  const bool per_channel = w.q.per_channel();
  const bool linear = n.op == "linear";
  const bool combined = profile == Profile::OnednnAmx && !L.depthwise;
  const float src_scale = reciprocal_chain(s_x, 2);
  L.src_scale = combined ? 1.0f : src_scale;
  L.w_scale.resize(L.cout);
  L.fbias.assign(L.cout, 0.0f);
  L.mult.assign(L.cout, reciprocal_chain(s_y, 3));
  for (int64_t c = 0; c < L.cout; ++c) {
    const float s_w = w.q.scale[per_channel ? c : 0];
    // PyTorch's oneDNN linear prepack stores 1 / s_w in float and ideep's matmul inverts it in double.
    const float w_scale = linear ? static_cast<float>(1.0 / static_cast<double>(1.0f / s_w)) : s_w;
    L.w_scale[c] = combined ? src_scale * w_scale : w_scale;
    if (n.has_param("bias_float")) L.fbias[c] = g.node_param(n, "bias_float").data<float>()[c];
  }
}

void set_requantization(const Graph& g, const Node& n, Profile profile, PreparedLayer& L) {
  const Value& x = g.value(n.inputs[0]);
  const Value& y = g.value(n.output);
  const Param& w = g.node_param(n, "weight");
  const float s_x = x.q.scale[0], s_y = y.q.scale[0];
  if (profile == Profile::FixedPoint) {
    set_fixed_point_multipliers(n, w, s_x, s_y, L);
  } else if (is_onednn(profile)) {
    set_onednn_scales(g, n, profile, w, s_x, s_y, L);
  } else {
    set_float_multipliers(g, n, profile, w, s_x, s_y, L);
  }
  L.ibias.assign(L.cout, 0);
  // int32_bias, qnnpack and fixed_point add the same int32 bias to the exact accumulator.
  if (profile != Profile::Fbgemm && !is_onednn(profile) && n.has_param("bias")) {
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

// ibias - zx * colsum in wrapping int32: the requantization adds ibias with a wrapping
// add, so acc_raw + (ibias - zx * colsum) == (acc_raw - zx * colsum) + ibias modulo 2^32.
int32_t raw_x_bias(int32_t ibias, int32_t zx, int32_t colsum) {
  return static_cast<int32_t>(static_cast<uint32_t>(ibias) - static_cast<uint32_t>(zx) * static_cast<uint32_t>(colsum));
}

// The largest |b[2p][j]| + |b[2p + 1][j]| of a k x cols weight matrix (row-major, k even or its
// last row paired with 0): the weight pairs whose products vpmaddubsw sums in int16 (u8s8_input.h).
template <class T>
int32_t max_pair_sum(const std::vector<T>& b, int64_t k, int64_t cols) {
  int32_t bound = 0;
  for (int64_t p = 0; p < k; p += 2)
    for (int64_t j = 0; j < cols; ++j) {
      const int32_t second = p + 1 < k ? std::abs(int32_t{b[(p + 1) * cols + j]}) : 0;
      bound = std::max(bound, std::abs(int32_t{b[p * cols + j]}) + second);
    }
  return bound;
}

// PreparedLayer::x_bound for the largest weight pair sum of a layer's u8 x s8 path.
int32_t x_bound_for(int32_t pair_bound) { return pair_bound == 0 ? 255 : std::min(255, INT16_MAX / pair_bound); }

// Packs the uint8 x int8 GEMM weights when the layer qualifies (see prepared_layer.h).
void prepare_u8s8(const Param& w, DType input_dtype, PreparedLayer& L) {
  const char* env = std::getenv("QNNPY_GEMM");
  if ((env && std::strcmp(env, "s16") == 0) || input_dtype != DType::UInt8) return;
  std::vector<std::vector<int16_t>> bs;
  for (int64_t grp = 0; grp < L.groups; ++grp) {
    bs.push_back(conv_b_matrix(w, L, grp));
    for (int16_t v : bs.back())
      if (v < INT8_MIN || v > INT8_MAX) return;
  }
  L.kq = (L.k + 3) / 4 * 4;
  const int64_t per_group = packed_b_u8s8_size(L.k, L.cout_per_group);
  L.packed_b_u8s8.resize(per_group * L.groups);
  L.ibias_raw_x.resize(L.cout);
  int32_t pair_bound = 0;
  for (int64_t grp = 0; grp < L.groups; ++grp) {
    const std::vector<int16_t>& b = bs[grp];
    const std::vector<int8_t> b8(b.begin(), b.end());
    pack_b_u8s8(b8.data(), L.k, L.cout_per_group, L.packed_b_u8s8.data() + grp * per_group);
    for (int64_t j = 0; j < L.cout_per_group; ++j) {
      auto at = [&](int64_t k) { return k < L.k ? int32_t{b[k * L.cout_per_group + j]} : 0; };
      int32_t colsum = 0;
      for (int64_t k = 0; k < L.k; ++k) colsum += at(k);
      L.ibias_raw_x[grp * L.cout_per_group + j] = raw_x_bias(L.ibias[grp * L.cout_per_group + j], L.input_zp, colsum);
    }
    pair_bound = std::max(pair_bound, max_pair_sum(b, L.k, L.cout_per_group));
  }
  // A task pads every input row from its first window to its last; with a stride along y of more
  // than twice the window's height most of them would be padded for nothing (im2col copies the windows).
  const int64_t window_h = (L.kh - 1) * L.dh + 1;
  if (L.groups == 1 && L.dw == 1 && !L.pointwise() && L.sh <= 2 * window_h) {
    const int64_t span = L.kw * L.cin_per_group, cg = L.cin_per_group;  // span: the bytes of one kernel row
    L.run_len = (span + 3) / 4 * 4;
    // Window columns where the runs' rounding adds more than 1/8 to k and the multiply-adds it saves
    // per output pixel repay copying the pixel's sw new columns of kh * cin bytes: at least 12 per
    // byte (on AMD EPYC Zen 4 both the avx2 and the avx512vnni sets gain at 30 per byte, ResNet-18's
    // conv1, and at 14, MobileNetV2's 3x3 first conv of 32 channels; benchmarks/RESULTS.md).
    const int64_t saved = L.cout_per_group * (L.kh * L.run_len - L.kq), copied = L.sw * L.kh * cg;
    L.window_columns = L.kh > 1 && 8 * L.kh * L.run_len > 9 * L.kq && saved >= 12 * copied;
    if (L.window_columns) L.run_len = L.kq;
    if (L.window_columns || (L.run_len != span && L.kh > 1)) {  // otherwise the runs are packed_b_u8s8's rows
      const int64_t k_in_place = L.runs() * L.run_len;
      std::vector<int8_t> b_runs(static_cast<size_t>(k_in_place * L.cout_per_group), 0);
      for (int64_t ky = 0; ky < L.kh; ++ky)
        for (int64_t kx = 0; kx < L.kw; ++kx)
          for (int64_t ic = 0; ic < cg; ++ic) {
            const int64_t at = L.window_columns ? (kx * L.kh + ky) * cg + ic : ky * L.run_len + kx * cg + ic;
            const int64_t from = ky * span + kx * cg + ic;  // im2col's order
            for (int64_t j = 0; j < L.cout_per_group; ++j)
              b_runs[at * L.cout_per_group + j] = static_cast<int8_t>(bs[0][from * L.cout_per_group + j]);
          }
      L.packed_b_runs.resize(packed_b_u8s8_size(k_in_place, L.cout_per_group));
      pack_b_u8s8(b_runs.data(), k_in_place, L.cout_per_group, L.packed_b_runs.data());
      // The in-place A pairs the weights differently (a zero after each kernel row, or the columns'
      // order): both pairings must fit.
      pair_bound = std::max(pair_bound, max_pair_sum(b_runs, k_in_place, L.cout_per_group));
    }
  }
  L.x_bound = x_bound_for(pair_bound);
}

// The Winograd weights U_e = Gs g Gs^T of each (input, output) channel pair (kernels.h) of the
// weight matrix b, when every sum of the transform fits in int32: with |x - zx| <= 255,
// |V| <= 4 * 255, so the GEMM sums are bounded by 1020 sum_ic |U_e| and the output 4 Y by
// 4 * 255 sum |g|.
void pack_winograd(const std::vector<int16_t>& b, PreparedLayer& L) {
  const int64_t cin = L.cin_per_group, cout = L.cout;
  constexpr int kGs[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};
  std::vector<std::vector<int16_t>> u(16, std::vector<int16_t>(static_cast<size_t>(cin * cout)));
  for (int64_t j = 0; j < cout; ++j) {
    int64_t plane_sum[16] = {}, taps_sum = 0;
    for (int64_t ic = 0; ic < cin; ++ic) {
      int32_t g[3][3], t[4][3];
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) {
          g[ky][kx] = b[((ky * 3 + kx) * cin + ic) * cout + j];
          if (std::abs(g[ky][kx]) > 255) return;  // keeps |U| <= 9 * 255 within int16
          taps_sum += std::abs(g[ky][kx]);
        }
      for (int i = 0; i < 4; ++i)
        for (int kx = 0; kx < 3; ++kx) t[i][kx] = kGs[i][0] * g[0][kx] + kGs[i][1] * g[1][kx] + kGs[i][2] * g[2][kx];
      for (int i = 0; i < 4; ++i)
        for (int e = 0; e < 4; ++e) {
          const int32_t value = t[i][0] * kGs[e][0] + t[i][1] * kGs[e][1] + t[i][2] * kGs[e][2];
          u[4 * i + e][ic * cout + j] = static_cast<int16_t>(value);
          plane_sum[4 * i + e] += std::abs(value);
        }
    }
    for (int64_t sum : plane_sum)
      if (1020 * sum > INT32_MAX) return;
    if (4 * 255 * taps_sum > INT32_MAX) return;
  }
  const int64_t per = packed_b_size(cin, cout);
  L.winograd_b.resize(static_cast<size_t>(16 * per));
  for (int e = 0; e < 16; ++e) pack_b(u[e].data(), cin, cout, L.winograd_b.data() + e * per);
}

void prepare_depthwise(const Param& w, DType input_dtype, PreparedLayer& L) {
  const int64_t taps = L.kh * L.kw;
  std::vector<int16_t> wt(static_cast<size_t>(taps * L.cout));  // (taps, cout)
  const int8_t* wd = w.data<int8_t>();
  L.ibias_raw_x.resize(L.cout);
  for (int64_t c = 0; c < L.cout; ++c) {
    const int32_t zp = w.q.zero_point[w.q.per_channel() ? c : 0];
    int32_t sum = 0;
    for (int64_t t = 0; t < taps; ++t) {
      wt[t * L.cout + c] = static_cast<int16_t>(wd[c * taps + t] - zp);
      sum += wt[t * L.cout + c];
    }
    L.ibias_raw_x[c] = raw_x_bias(L.ibias[c], L.input_zp, sum);
  }
  L.depthwise_pairs.resize(static_cast<size_t>((taps + 1) / 2 * 2 * L.cout));
  pack_depthwise_pairs(wt.data(), taps, L.cout, L.depthwise_pairs.data());
  // Stride 1 only: with stride 2 the quads were no faster than the row kernel (benchmarks/RESULTS.md).
  if (input_dtype != DType::UInt8 || L.sh != 1) return;
  for (int16_t v : wt)
    if (v < INT8_MIN || v > INT8_MAX) return;
  L.quad_groups = (L.kh + 3) / 4;
  // With dilation 1 the quads' 4 * groups rows hold the windows of this many output rows.
  L.quad_shifts = L.dh == 1 ? 4 * L.quad_groups - L.kh + 1 : 1;
  L.depthwise_quads.resize(static_cast<size_t>(L.quad_shifts * L.quad_groups * L.kw * L.cout * 4));
  pack_depthwise_quads(wt.data(), L.kh, L.kw, L.cout, L.quad_groups, L.quad_shifts, L.depthwise_quads.data());
  // vpmaddubsw sums the products of slots 0, 1 and of slots 2, 3 in int16: the pairs of one column.
  const int64_t slots = static_cast<int64_t>(L.depthwise_quads.size());
  L.x_bound = x_bound_for(max_pair_sum(L.depthwise_quads, slots, 1));
}

// Geometry of a conv2d / float_conv2d (OIHW weight) or linear / float_linear (a 1x1 conv over rows).
void set_geometry(const Node& n, const Param& w, PreparedLayer& L) {
  const bool conv = n.op == "conv2d" || n.op == "float_conv2d";
  if (conv) {
    L.cout = w.shape[0];
    L.groups = n.int_attr("groups");
    L.cin_per_group = w.shape[1];
    L.cout_per_group = L.cout / L.groups;
    L.kh = w.shape[2];
    L.kw = w.shape[3];
    const auto &st = n.ints_attr("stride"), &pd = n.ints_attr("padding"), &dl = n.ints_attr("dilation");
    L.sh = st[0], L.sw = st[1], L.ph = pd[0], L.pw = pd[1], L.dh = dl[0], L.dw = dl[1];
  } else if (n.op == "linear" || n.op == "float_linear") {
    L.cout = L.cout_per_group = w.shape[0];
    L.cin_per_group = w.shape[1];
  } else {
    throw std::logic_error("prepare_layer: " + n.op + " has no weights");
  }
  L.k = L.kh * L.kw * L.cin_per_group;
  L.kp = (L.k + 1) / 2 * 2;
  L.depthwise = conv && L.cin_per_group == 1 && L.cout_per_group == 1;
}

// The packed weights of every path the layer can take; needs L.ibias and L.input_zp set.
void pack_weights(const Param& w, DType input_dtype, PreparedLayer& L) {
  if (L.depthwise) {
    prepare_depthwise(w, input_dtype, L);
    return;
  }
  const int64_t per_group = packed_b_size(L.k, L.cout_per_group);
  L.packed_b.resize(per_group * L.groups);
  for (int64_t grp = 0; grp < L.groups; ++grp) {
    std::vector<int16_t> b = conv_b_matrix(w, L, grp);  // linear: kh = kw = 1, the same (k, j) layout
    pack_b(b.data(), L.k, L.cout_per_group, L.packed_b.data() + grp * per_group);
  }
  prepare_u8s8(w, input_dtype, L);
}

}  // namespace

Profile layer_profile(Profile profile, const Graph& g, const Node& n) {
  if (profile != Profile::X86 && profile != Profile::X86Amx) return profile;
  if (n.op == "linear") return Profile::Fbgemm;  // the x86 engine's linears are fbgemm's
  const Param& w = g.node_param(n, "weight");
  const bool symmetric = std::all_of(w.q.zero_point.begin(), w.q.zero_point.end(), [](int32_t z) { return z == 0; });
  bool onednn = symmetric && n.int_attr("groups") <= 100;
  if (n.op == "conv_transpose2d") {
    const auto& out_pad = n.ints_attr("output_padding");
    onednn = onednn && !w.q.per_channel() &&
             std::all_of(out_pad.begin(), out_pad.end(), [](int64_t p) { return p == 0; });
  }
  if (!onednn) return Profile::Fbgemm;
  return profile == Profile::X86Amx ? Profile::OnednnAmx : Profile::Onednn;
}

PreparedLayer prepare_layer(const Graph& g, const Node& n, Profile profile) {
  profile = layer_profile(profile, g, n);
  PreparedLayer L;
  const Param& w = g.node_param(n, "weight");
  set_geometry(n, w, L);
  set_requantization(g, n, profile, L);
  pack_weights(w, g.value(n.inputs[0]).dtype, L);
  return L;
}

void prepare_winograd(const Graph& g, const Node& n, PreparedLayer& L) {
  if (L.kh != 3 || L.kw != 3 || L.sh != 1 || L.sw != 1 || L.dh != 1 || L.dw != 1 || L.groups != 1 ||
      L.cin_per_group % 2 != 0) {
    return;
  }
  pack_winograd(conv_b_matrix(g.node_param(n, "weight"), L, 0), L);
}

PreparedLayer prepare_float_output_layer(const Graph& g, const Node& n, const Value& x) {
  PreparedLayer L;
  const Param& w = g.node_param(n, "weight");
  set_geometry(n, w, L);
  L.ibias.assign(L.cout, 0);  // the accumulators stay the exact sums; the float bias comes after scaling
  L.input_zp = x.q.zero_point[0];
  pack_weights(w, x.dtype, L);
  return L;
}

}  // namespace qnnpy
