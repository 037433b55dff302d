#include "runtime/conv3d.h"

#include <algorithm>

#include "runtime/conv_runner.h"

namespace qnnpy {
namespace {

// W2[o][t * ig + i][ky][kx] = W[o][i][t][ky][kx]: the depth taps of a group's input channels side by side.
Param taps_as_channels(const Param& w) {
  const int64_t out = w.shape[0], ig = w.shape[1], kd = w.shape[2], kh = w.shape[3], kw = w.shape[4];
  Param p = w;
  p.shape = {out, ig * kd, kh, kw};
  const int8_t* src = w.data<int8_t>();
  int8_t* dst = p.mutable_data<int8_t>();
  const int64_t plane = kh * kw;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < ig; ++i)
      for (int64_t t = 0; t < kd; ++t) {
        std::copy_n(src + ((o * ig + i) * kd + t) * plane, plane, dst + (o * ig * kd + t * ig + i) * plane);
      }
  return p;
}

}  // namespace

Conv3dRunner::Conv3dRunner(const Graph& g, const Node& n, Profile profile) {
  const Value &x = g.value(n.inputs[0]), &y = g.value(n.output);
  const Param& w = g.node_param(n, "weight");
  const auto &stride = n.ints_attr("stride"), &pad = n.ints_attr("padding"), &dil = n.ints_attr("dilation");
  taps_ = w.shape[2];
  stride_d_ = stride[0], padding_d_ = pad[0], dilation_d_ = dil[0];
  groups_ = n.int_attr("groups");
  const Shape frames{x.shape[0] * y.shape[2], x.shape[1] * taps_, x.shape[3], x.shape[4]};

  Node quantize;
  quantize.op = "quantize";
  quantize.source = n.source;
  quantize.inputs = {conv_.add_input("frames", frames)};
  input_ = conv_.add_node(std::move(quantize), Value{"frames_q", x.dtype, frames, x.q});

  Node conv;
  conv.op = "conv2d";
  conv.source = n.source;
  conv.inputs = {input_};
  conv.ints = {{"stride", {stride[1], stride[2]}}, {"padding", {pad[1], pad[2]}}, {"dilation", {dil[1], dil[2]}},
               {"groups", {groups_}}, {"relu", {n.int_attr("relu")}}};
  conv.params["weight"] = conv_.add_param(taps_as_channels(w));
  for (const char* role : {"bias", "bias_float"}) {
    if (n.has_param(role)) conv.params[role] = conv_.add_param(g.node_param(n, role));
  }
  conv_.add_node(std::move(conv), Value{"out", y.dtype, {}, y.q},
                 {frames[0], y.shape[1], y.shape[3], y.shape[4]});
  layer_ = prepare_layer(conv_, conv_.nodes().back(), layer_profile(profile, g, n));
}

const char* Conv3dRunner::run(const OpArgs& a) const {
  const Shape& xs = a.in().shape;
  const int64_t batch = xs[0], channels = xs[1], depth = xs[2], h = xs[3], w = xs[4];
  const Shape& ys = a.graph.value(a.node.output).shape;
  const int64_t out_channels = ys[1], frames = ys[2], oh = ys[3], ow = ys[4];
  const int64_t ig = channels / groups_, wide = channels * taps_, plane = h * w;
  const uint8_t zx = static_cast<uint8_t>(a.in().q.zero_point[0]);
  std::vector<Buffer> values(conv_.values().size());
  std::vector<uint8_t>& gathered = values[input_].q;  // NHWC, as conv2d reads its input
  gathered.assign(static_cast<size_t>(batch * frames * plane * wide), zx);
  const uint8_t* x = a.in_buf().q.data();  // rank 5: logical NCDHW
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t z = 0; z < frames; ++z)
      for (int64_t t = 0; t < taps_; ++t) {
        const int64_t d = z * stride_d_ + t * dilation_d_ - padding_d_;
        if (d < 0 || d >= depth) continue;
        uint8_t* dst = gathered.data() + (b * frames + z) * plane * wide;
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t column = (c / ig) * ig * taps_ + t * ig + c % ig;
          const uint8_t* src = x + ((b * channels + c) * depth + d) * plane;
          for (int64_t p = 0; p < plane; ++p) dst[p * wide + column] = src[p];
        }
      }
  const Node& conv = conv_.nodes().back();
  const char* kernel = run_weighted(OpArgs{conv_, conv, values, a.k, a.profile, a.threads}, layer_, true);
  const std::vector<uint8_t>& out = values[conv.output].q;  // (N * Do, Ho, Wo, O)
  Buffer& y = a.out_buf();
  y.q.resize(out.size());
  const int64_t out_plane = oh * ow;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t z = 0; z < frames; ++z)
      for (int64_t p = 0; p < out_plane; ++p) {
        const uint8_t* src = out.data() + ((b * frames + z) * out_plane + p) * out_channels;
        for (int64_t o = 0; o < out_channels; ++o) y.q[((b * out_channels + o) * frames + z) * out_plane + p] = src[o];
      }
  y.torch_channels_last = true;  // PyTorch's quantized conv3d returns channels_last_3d
  return kernel;
}

}  // namespace qnnpy
