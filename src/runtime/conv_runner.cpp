#include "runtime/conv_runner.h"

#include <algorithm>

#include "runtime/parallel.h"

namespace qnnpy {
namespace {

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

void run_weighted(const OpArgs& a, const PreparedLayer& L, int threads) {
  const Node& n = a.node;
  const Value &xv = a.in(), &yv = a.out();
  const Buffer& x = a.in_buf();
  Buffer& y = a.out_buf();
  const bool sgn = a.is_signed();
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
    a.k.depthwise_s16(padded.data(), s, L.depthwise_weights.data(), acc.data());
    a.k.requantize(acc.data(), rows, cin, cin, L.requant(0), y.q.data(), cin);
    return;
  }

  constexpr int64_t kChunkRows = 192;
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  const int64_t per_group = packed_b_size(L.k, L.cout_per_group);
  const int workers = static_cast<int>(std::min<int64_t>(threads, chunks));
  std::vector<std::vector<int16_t>> a_buf(workers, std::vector<int16_t>(kChunkRows * L.kp));
  std::vector<std::vector<int32_t>> c_buf(workers, std::vector<int32_t>(kChunkRows * L.cout_per_group));
  parallel_chunks(chunks, workers, [&](int64_t chunk, int worker) {
    const int64_t r0 = chunk * kChunkRows, r1 = std::min(rows, r0 + kChunkRows);
    for (int64_t grp = 0; grp < L.groups; ++grp) {
      im2col(x.q.data(), sgn, h, w, cin, L, oh, ow, grp, r0, r1, a_buf[worker].data());
      a.k.gemm_s16(a_buf[worker].data(), r1 - r0, L.kp, L.packed_b.data() + grp * per_group, L.cout_per_group,
                  c_buf[worker].data(), L.cout_per_group);
      a.k.requantize(c_buf[worker].data(), r1 - r0, L.cout_per_group, L.cout_per_group,
                    L.requant(grp * L.cout_per_group), y.q.data() + r0 * L.cout + grp * L.cout_per_group, L.cout);
    }
  });
}

}  // namespace qnnpy
