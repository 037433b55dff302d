#include "runtime/conv_transpose.h"

#include <algorithm>

#include "runtime/conv_runner.h"

namespace qnnpy {
namespace {

// W'[g * og + o][i][ky][kx] = W[g * ig + i][o][kh - 1 - ky][kw - 1 - kx].
Param flipped_weight(const Param& w, int64_t groups) {
  const int64_t in = w.shape[0], og = w.shape[1], kh = w.shape[2], kw = w.shape[3], ig = in / groups;
  Param p = w;
  p.shape = {og * groups, ig, kh, kw};
  const int8_t* src = w.data<int8_t>();
  int8_t* dst = p.mutable_data<int8_t>();
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t o = 0; o < og; ++o)
      for (int64_t i = 0; i < ig; ++i)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t x = 0; x < kw; ++x) {
            dst[(((g * og + o) * ig + i) * kh + y) * kw + x] = src[(((g * ig + i) * og + o) * kh + (kh - 1 - y)) * kw + (kw - 1 - x)];
          }
  return p;
}

}  // namespace

TransposedConv::TransposedConv(const Graph& g, const Node& n, Profile profile) {
  const Value &x = g.value(n.inputs[0]), &y = g.value(n.output);
  const Param& w = g.node_param(n, "weight");
  const auto &stride = n.ints_attr("stride"), &pad = n.ints_attr("padding"), &dil = n.ints_attr("dilation"),
             &out_pad = n.ints_attr("output_padding");
  stride_h_ = stride[0], stride_w_ = stride[1];
  top_ = dil[0] * (w.shape[2] - 1) - pad[0];
  left_ = dil[1] * (w.shape[3] - 1) - pad[1];
  const Shape spread{x.shape[0], x.shape[1], (x.shape[2] - 1) * stride[0] + 1 + 2 * top_ + out_pad[0],
                     (x.shape[3] - 1) * stride[1] + 1 + 2 * left_ + out_pad[1]};

  Node quantize;
  quantize.op = "quantize";
  quantize.source = n.source;
  quantize.inputs = {conv_.add_input("spread", spread)};
  Value q{"spread_q", x.dtype, spread, x.q};
  input_ = conv_.add_node(std::move(quantize), q);

  Node conv;
  conv.op = "conv2d";
  conv.source = n.source;
  conv.inputs = {input_};
  conv.ints = {{"stride", {1, 1}}, {"padding", {0, 0}}, {"dilation", dil}, {"groups", {n.int_attr("groups")}},
               {"relu", {n.int_attr("relu")}}};
  conv.params["weight"] = conv_.add_param(flipped_weight(w, n.int_attr("groups")));
  for (const char* role : {"bias", "bias_float"}) {
    if (n.has_param(role)) conv.params[role] = conv_.add_param(g.node_param(n, role));
  }
  conv_.add_node(std::move(conv), Value{"out", y.dtype, {}, y.q}, y.shape);
  layer_ = prepare_layer(conv_, conv_.nodes().back(), layer_profile(profile, g, n));
}

const char* TransposedConv::run(const OpArgs& a) const {
  const Value& xv = a.in();
  const Value& sv = conv_.value(input_);
  const int64_t n = xv.shape[0], c = xv.shape[1], h = xv.shape[2], w = xv.shape[3];
  const int64_t sh = sv.shape[2], sw = sv.shape[3];
  const uint8_t zx = static_cast<uint8_t>(xv.q.zero_point[0]);
  std::vector<Buffer> values(conv_.values().size());
  std::vector<uint8_t>& spread = values[input_].q;
  spread.assign(static_cast<size_t>(n * sh * sw * c), zx);
  const uint8_t* x = a.in_buf().q.data();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t iy = 0; iy < h; ++iy) {
      const int64_t sy = top_ + iy * stride_h_;
      if (sy < 0 || sy >= sh) continue;
      for (int64_t ix = 0; ix < w; ++ix) {
        const int64_t sx = left_ + ix * stride_w_;
        if (sx < 0 || sx >= sw) continue;
        std::copy_n(x + ((b * h + iy) * w + ix) * c, c, &spread[((b * sh + sy) * sw + sx) * c]);
      }
    }
  const Node& conv = conv_.nodes().back();
  const char* kernel = run_weighted(OpArgs{conv_, conv, values, a.k, a.profile, a.threads}, layer_, true);
  Buffer& y = a.out_buf();
  y.q = std::move(values[conv.output].q);
  y.torch_channels_last = true;
  return kernel;
}

}  // namespace qnnpy
