#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "runtime/layout.h"
#include "runtime/parallel.h"

namespace qnnpy {
namespace {

bool is_signed(DType t) { return t == DType::Int8; }

// Rows of the im2col matrix for one group: (x - zx) as int16, zeros for padding, k padded to kp.
void im2col(const uint8_t* x, bool sgn, int64_t h, int64_t w, int64_t cin, const PreparedLayer& L, int64_t oh,
            int64_t ow, int64_t group, int64_t r0, int64_t r1, int16_t* a) {
  const int64_t cg = L.cin_per_group, c0 = group * cg;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r / (oh * ow), oy = (r / ow) % oh, ox = r % ow;
    int16_t* dst = a + (r - r0) * L.kp;
    for (int64_t ky = 0; ky < L.kh; ++ky) {
      const int64_t iy = oy * L.sh - L.ph + ky * L.dh;
      for (int64_t kx = 0; kx < L.kw; ++kx, dst += cg) {
        const int64_t ix = ox * L.sw - L.pw + kx * L.dw;
        if (iy < 0 || iy >= h || ix < 0 || ix >= w) {
          std::fill(dst, dst + cg, int16_t{0});
          continue;
        }
        const uint8_t* src = x + ((b * h + iy) * w + ix) * cin + c0;
        if (sgn) {
          for (int64_t i = 0; i < cg; ++i) dst[i] = static_cast<int16_t>(static_cast<int8_t>(src[i]) - L.input_zp);
        } else {
          for (int64_t i = 0; i < cg; ++i) dst[i] = static_cast<int16_t>(src[i] - L.input_zp);
        }
      }
    }
    if (L.kp > L.k) *dst = 0;
  }
}

}  // namespace

Executor::Executor(std::shared_ptr<const Graph> graph, Profile profile, Isa isa, int threads)
    : graph_(std::move(graph)), profile_(profile), isa_(isa), k_(kernel_set(isa)), threads_(std::max(1, threads)) {
  const auto& nodes = graph_->nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].op == "conv2d" || nodes[i].op == "linear") layers_.emplace(i, prepare_layer(*graph_, nodes[i], profile_));
  }
}

void Executor::run_weighted(const Node& n, const PreparedLayer& L, std::vector<Buffer>& values) {
  const Value& xv = graph_->value(n.inputs[0]);
  const Value& yv = graph_->value(n.output);
  const Buffer& x = values[n.inputs[0]];
  Buffer& y = values[n.output];
  const bool sgn = is_signed(xv.dtype);
  int64_t batch, h, w, cin, oh, ow;
  if (n.op == "conv2d") {
    batch = xv.shape[0], cin = xv.shape[1], h = xv.shape[2], w = xv.shape[3];
    oh = yv.shape[2], ow = yv.shape[3];
    y.torch_channels_last = true;  // fbgemm and qnnpack convs write channels_last
  } else {
    cin = xv.shape.back(), batch = num_elements(xv.shape) / cin, h = w = oh = ow = 1;
  }
  const int64_t rows = batch * oh * ow;
  y.q.assign(static_cast<size_t>(rows * L.cout), 0);

  if (L.depthwise) {
    const int64_t hp = h + 2 * L.ph, wp = w + 2 * L.pw;
    std::vector<int16_t> padded(static_cast<size_t>(batch * hp * wp * cin), 0);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t iy = 0; iy < h; ++iy)
        for (int64_t ix = 0; ix < w; ++ix) {
          const uint8_t* src = x.q.data() + ((b * h + iy) * w + ix) * cin;
          int16_t* dst = padded.data() + ((b * hp + iy + L.ph) * wp + ix + L.pw) * cin;
          for (int64_t c = 0; c < cin; ++c) {
            dst[c] = static_cast<int16_t>((sgn ? int32_t(int8_t(src[c])) : int32_t(src[c])) - L.input_zp);
          }
        }
    Pool2dShape s{batch, h, w, cin, oh, ow, L.kh, L.kw, L.sh, L.sw, L.ph, L.pw, L.dh, L.dw};
    std::vector<int32_t> acc(static_cast<size_t>(rows * cin));
    k_.depthwise_s16(padded.data(), s, L.depthwise_weights.data(), acc.data());
    k_.requantize(acc.data(), rows, cin, cin, L.requant(0), y.q.data(), cin);
    return;
  }

  constexpr int64_t kChunkRows = 192;
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  const int64_t per_group = packed_b_size(L.k, L.cout_per_group);
  const int workers = static_cast<int>(std::min<int64_t>(threads_, chunks));
  std::vector<std::vector<int16_t>> a_buf(workers, std::vector<int16_t>(kChunkRows * L.kp));
  std::vector<std::vector<int32_t>> c_buf(workers, std::vector<int32_t>(kChunkRows * L.cout_per_group));
  parallel_chunks(chunks, workers, [&](int64_t chunk, int worker) {
    const int64_t r0 = chunk * kChunkRows, r1 = std::min(rows, r0 + kChunkRows);
    for (int64_t grp = 0; grp < L.groups; ++grp) {
      im2col(x.q.data(), sgn, h, w, cin, L, oh, ow, grp, r0, r1, a_buf[worker].data());
      k_.gemm_s16(a_buf[worker].data(), r1 - r0, L.kp, L.packed_b.data() + grp * per_group, L.cout_per_group,
                  c_buf[worker].data(), L.cout_per_group);
      k_.requantize(c_buf[worker].data(), r1 - r0, L.cout_per_group, L.cout_per_group,
                    L.requant(grp * L.cout_per_group), y.q.data() + r0 * L.cout + grp * L.cout_per_group, L.cout);
    }
  });
}

void Executor::run_node(const Node& n, std::vector<Buffer>& values, int64_t index) {
  const Value& out = graph_->value(n.output);
  Buffer& y = values[n.output];
  const int64_t count = num_elements(out.shape);
  const bool rank4 = out.shape.size() == 4;
  if (n.op == "conv2d" || n.op == "linear") {
    run_weighted(n, layers_.at(index), values);
    return;
  }
  const Value& xv = graph_->value(n.inputs[0]);
  const Buffer& x = values[n.inputs[0]];
  const bool sgn = is_signed(xv.dtype);
  if (n.op == "quantize") {
    std::vector<uint8_t> q(count);
    k_.quantize(x.f.data(), count, 1.0f / out.q.scale[0], out.q.zero_point[0], dtype_min(out.dtype),
                dtype_max(out.dtype), q.data());
    y.q = rank4 ? nchw_to_nhwc(q.data(), out.shape) : std::move(q);
    return;
  }
  if (n.op == "dequantize") {
    std::vector<uint8_t> logical = xv.shape.size() == 4 ? nhwc_to_nchw(x.q.data(), xv.shape) : x.q;
    y.f.resize(count);
    k_.dequantize(logical.data(), count, sgn, xv.q.scale[0], xv.q.zero_point[0], y.f.data());
    return;
  }
  y.torch_channels_last = x.torch_channels_last;
  y.q.resize(count);
  if (n.op == "add") {
    const Value& bv = graph_->value(n.inputs[1]);
    const bool relu = n.int_attr("relu") != 0;
    const int32_t zp = out.q.zero_point[0];
    if (profile_ == Profile::Fbgemm) {
      AddFloatParams p{xv.q.scale[0], bv.q.scale[0], 1.0f / out.q.scale[0], xv.q.zero_point[0], bv.q.zero_point[0],
                       zp, dtype_min(out.dtype), dtype_max(out.dtype), relu};
      k_.add_float(x.q.data(), values[n.inputs[1]].q.data(), count, sgn, p, y.q.data());
    } else {
      // QNNPACK pytorch_qnnp_compute_add_quantization_params.
      const float a_ratio = xv.q.scale[0] / out.q.scale[0], b_ratio = bv.q.scale[0] / out.q.scale[0];
      const float larger = std::max(a_ratio, b_ratio);
      uint32_t bits;
      std::memcpy(&bits, &larger, sizeof bits);
      const int32_t shift = 21 - (static_cast<int32_t>(bits >> 23) - 127);
      if (shift < 13 || shift > 31) {
        throw std::invalid_argument("add (" + n.source + "): input/output scale ratio " + std::to_string(larger) +
                                    " is outside QNNPACK's supported range [2^-14, 2^8)");
      }
      const float two_shift = static_cast<float>(uint64_t{1} << shift);
      AddFixedParams p;
      p.a_mult = static_cast<int32_t>(std::lrintf(a_ratio * two_shift));
      p.b_mult = static_cast<int32_t>(std::lrintf(b_ratio * two_shift));
      p.zp_term = static_cast<int32_t>(-(static_cast<uint32_t>(p.a_mult) * static_cast<uint32_t>(xv.q.zero_point[0]) +
                                         static_cast<uint32_t>(p.b_mult) * static_cast<uint32_t>(bv.q.zero_point[0])));
      p.shift = shift;
      p.out_zp = zp;
      p.lo = relu ? zp : dtype_min(out.dtype);
      p.hi = dtype_max(out.dtype);
      k_.add_fixed(x.q.data(), values[n.inputs[1]].q.data(), count, sgn, p, y.q.data());
    }
    return;
  }
  if (n.op == "relu") {
    k_.relu(x.q.data(), count, sgn, xv.q.zero_point[0], y.q.data());
    return;
  }
  if (n.op == "max_pool2d" || n.op == "adaptive_avg_pool2d") {
    Pool2dShape s{xv.shape[0], xv.shape[2], xv.shape[3], xv.shape[1], out.shape[2], out.shape[3], 1, 1, 1, 1, 0, 0, 1, 1};
    if (n.op == "max_pool2d") {
      const auto &k = n.ints_attr("kernel"), &st = n.ints_attr("stride"), &pd = n.ints_attr("padding"),
                 &dl = n.ints_attr("dilation");
      s.kh = k[0], s.kw = k[1], s.sh = st[0], s.sw = st[1], s.ph = pd[0], s.pw = pd[1], s.dh = dl[0], s.dw = dl[1];
      k_.max_pool2d(x.q.data(), s, sgn, y.q.data());
      return;
    }
    AdaptivePoolParams p{AvgPoolRule::FbgemmNhwc, xv.q.scale[0], out.q.scale[0], out.q.zero_point[0],
                         dtype_min(out.dtype), dtype_max(out.dtype)};
    const bool tiles = s.h % s.oh == 0 && s.w % s.ow == 0;
    if (profile_ == Profile::Int32Bias && tiles && !sgn) {
      p.rule = AvgPoolRule::Qnnpack;
    } else if (!x.torch_channels_last) {
      p.rule = AvgPoolRule::FbgemmNchw;
    }
    k_.adaptive_avg_pool2d(x.q.data(), s, sgn, p, y.q.data());
    return;
  }
  if (n.op == "reshape") {
    std::vector<uint8_t> logical = xv.shape.size() == 4 ? nhwc_to_nchw(x.q.data(), xv.shape) : x.q;
    y.q = rank4 ? nchw_to_nhwc(logical.data(), out.shape) : std::move(logical);
    return;
  }
  throw std::invalid_argument("runtime: no kernel for op '" + n.op + "' (" + n.source + ")");
}

HostTensor Executor::to_host(int value_id, const Buffer& b) const {
  const Value& v = graph_->value(value_id);
  HostTensor t;
  t.dtype = v.dtype;
  t.shape = v.shape;
  if (v.dtype == DType::Float32) {
    t.bytes.resize(b.f.size() * sizeof(float));
    std::memcpy(t.bytes.data(), b.f.data(), t.bytes.size());
  } else {
    t.bytes = v.shape.size() == 4 ? nhwc_to_nchw(b.q.data(), v.shape) : b.q;
  }
  return t;
}

std::vector<HostTensor> Executor::run(const std::vector<const float*>& inputs,
                                      std::map<std::string, HostTensor>* captured) {
  const Graph& g = *graph_;
  if (inputs.size() != g.inputs().size()) {
    throw std::invalid_argument("runtime: " + std::to_string(g.inputs().size()) + " input(s) expected, got " +
                                std::to_string(inputs.size()));
  }
  std::vector<Buffer> values(g.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    values[g.inputs()[i]].f.assign(inputs[i], inputs[i] + num_elements(v.shape));
  }
  const auto& nodes = g.nodes();
  node_seconds_.assign(nodes.size(), 0.0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    run_node(nodes[i], values, static_cast<int64_t>(i));
    node_seconds_[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (captured) (*captured)[g.value(nodes[i].output).name] = to_host(nodes[i].output, values[nodes[i].output]);
  }
  std::vector<HostTensor> outs;
  for (int id : g.outputs()) outs.push_back(to_host(id, values[id]));
  return outs;
}

}  // namespace qnnpy
