#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/bilinear.h"
#include "ir/nearest.h"
#include "runtime/ops/float_spatial_runners.h"

namespace qnnpy {
namespace {

// One window axis: an output position's first tap and the taps' extent in the padded input.
struct Window {
  int64_t kernel, stride, padding, dilation;
};

Window window(const OpArgs& a, int axis, bool dilated) {
  const Node& n = a.node;
  return {n.ints_attr("kernel")[axis], n.ints_attr("stride")[axis], n.ints_attr("padding")[axis],
          dilated ? n.ints_attr("dilation")[axis] : 1};
}

// Calls f(plane input, plane output) for each of the N * C planes of a rank-4 float value.
template <class F>
void for_each_plane(const OpArgs& a, F f) {
  const Shape &x = a.in().shape, &y = a.out().shape;
  const std::vector<float>& in = a.in_buf().f;
  std::vector<float>& out = a.out_buf().f;
  out.resize(static_cast<size_t>(a.out_count()));
  for (int64_t p = 0; p < x[0] * x[1]; ++p) f(in.data() + p * x[2] * x[3], out.data() + p * y[2] * y[3]);
}

}  // namespace

// aten/src/ATen/native/cpu/MaxPoolKernel.cpp: the maximum of the taps inside the input, NaN
// winning (val > max || isnan(val)).
void run_float_max_pool2d(const OpArgs& a) {
  const Shape &x = a.in().shape, &y = a.out().shape;
  const Window wh = window(a, 0, true), ww = window(a, 1, true);
  for_each_plane(a, [&](const float* in, float* out) {
    for (int64_t oh = 0; oh < y[2]; ++oh) {
      for (int64_t ow = 0; ow < y[3]; ++ow) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t kh = 0; kh < wh.kernel; ++kh) {
          const int64_t ih = oh * wh.stride - wh.padding + kh * wh.dilation;
          if (ih < 0 || ih >= x[2]) continue;
          for (int64_t kw = 0; kw < ww.kernel; ++kw) {
            const int64_t iw = ow * ww.stride - ww.padding + kw * ww.dilation;
            if (iw < 0 || iw >= x[3]) continue;
            const float v = in[ih * x[3] + iw];
            if (v > m || std::isnan(v)) m = v;
          }
        }
        out[oh * y[3] + ow] = m;
      }
    }
  });
}

// aten/src/ATen/native/cpu/AvgPoolKernel.cpp: the window clipped to the padded input gives the
// count_include_pad divisor, clipped to the input the other one; the sum runs in float, row by row.
void float_avg_pool2d(const Node& n, const Shape& x, const float* x_data, const Shape& y, float* y_data) {
  const Window wh{n.ints_attr("kernel")[0], n.ints_attr("stride")[0], n.ints_attr("padding")[0], 1};
  const Window ww{n.ints_attr("kernel")[1], n.ints_attr("stride")[1], n.ints_attr("padding")[1], 1};
  const bool include_pad = n.int_attr("count_include_pad") != 0;
  const int64_t divisor = n.int_attr("divisor_override");
  for (int64_t plane = 0; plane < x[0] * x[1]; ++plane) {
    const float* in = x_data + plane * x[2] * x[3];
    float* out = y_data + plane * y[2] * y[3];
    for (int64_t oh = 0; oh < y[2]; ++oh) {
      for (int64_t ow = 0; ow < y[3]; ++ow) {
        int64_t h0 = oh * wh.stride - wh.padding, w0 = ow * ww.stride - ww.padding;
        int64_t h1 = std::min(h0 + wh.kernel, x[2] + wh.padding), w1 = std::min(w0 + ww.kernel, x[3] + ww.padding);
        const int64_t padded_count = (h1 - h0) * (w1 - w0);
        h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
        h1 = std::min(h1, x[2]), w1 = std::min(w1, x[3]);
        if (h0 >= h1 || w0 >= w1) {
          out[oh * y[3] + ow] = 0.0f;
          continue;
        }
        float sum = 0.0f;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += in[ih * x[3] + iw];
        const int64_t count = divisor ? divisor : include_pad ? padded_count : (h1 - h0) * (w1 - w0);
        out[oh * y[3] + ow] = sum / static_cast<float>(count);
      }
    }
  }
}

// aten/src/ATen/native/cpu/AdaptiveAvgPoolKernel.cpp (cpu_adaptive_avg_pool, contiguous input): windows
// [floor(o * in / out), ceil((o + 1) * in / out)), the sum in float row by row, then sum / kh / kw: two
// roundings, which differ from one division by kh * kw where neither is a power of two.
void float_adaptive_avg_pool2d(const Shape& x, const float* x_data, const Shape& y, float* y_data) {
  const int64_t ih = x[2], iw = x[3], oh = y[2], ow = y[3];
  for (int64_t p = 0; p < x[0] * x[1]; ++p) {
    const float* plane = x_data + p * ih * iw;
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t r0 = i * ih / oh, r1 = ((i + 1) * ih + oh - 1) / oh;
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t c0 = j * iw / ow, c1 = ((j + 1) * iw + ow - 1) / ow;
        float sum = 0.0f;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) sum += plane[r * iw + c];
        y_data[(p * oh + i) * ow + j] = sum / static_cast<float>(r1 - r0) / static_cast<float>(c1 - c0);
      }
    }
  }
}

void run_float_avg_pool2d(const OpArgs& a) {
  a.out_buf().f.resize(static_cast<size_t>(a.out_count()));
  float_avg_pool2d(a.node, a.in().shape, a.in_buf().f.data(), a.out().shape, a.out_buf().f.data());
}

void run_float_upsample_nearest2d(const OpArgs& a) {
  const Shape &x = a.in().shape, &y = a.out().shape;
  std::vector<int64_t> rows(static_cast<size_t>(y[2])), cols(static_cast<size_t>(y[3]));
  for (int64_t d = 0; d < y[2]; ++d) rows[d] = nearest_source_index(d, x[2], y[2], a.node.float_attr("scale_h"));
  for (int64_t d = 0; d < y[3]; ++d) cols[d] = nearest_source_index(d, x[3], y[3], a.node.float_attr("scale_w"));
  for_each_plane(a, [&](const float* in, float* out) {
    for (int64_t oh = 0; oh < y[2]; ++oh)
      for (int64_t ow = 0; ow < y[3]; ++ow) out[oh * y[3] + ow] = in[rows[oh] * x[3] + cols[ow]];
  });
}

// aten/src/ATen/native/cpu/UpSampleKernel.cpp (float32): the weights (1 - l, l) of the two source
// rows and columns, y = h0 * (w0 * x00 + w1 * x01) + h1 * (w0 * x10 + w1 * x11).
void run_float_upsample_bilinear2d(const OpArgs& a) {
  const Shape &x = a.in().shape, &y = a.out().shape;
  const bool align = a.node.int_attr("align_corners") != 0;
  const std::vector<BilinearTap> rows = bilinear_taps(x[2], y[2], align, a.node.float_attr("scale_h"));
  const std::vector<BilinearTap> cols = bilinear_taps(x[3], y[3], align, a.node.float_attr("scale_w"));
  for_each_plane(a, [&](const float* in, float* out) {
    for (int64_t oh = 0; oh < y[2]; ++oh) {
      const BilinearTap& r = rows[oh];
      const float h1 = r.w1, h0 = 1.0f - h1;
      for (int64_t ow = 0; ow < y[3]; ++ow) {
        const BilinearTap& c = cols[ow];
        const float w1 = c.w1, w0 = 1.0f - w1;
        out[oh * y[3] + ow] = h0 * (w0 * in[r.i0 * x[3] + c.i0] + w1 * in[r.i0 * x[3] + c.i1]) +
                              h1 * (w0 * in[r.i1 * x[3] + c.i0] + w1 * in[r.i1 * x[3] + c.i1]);
      }
    }
  });
}

// aten/src/ATen/native/cpu/batch_norm_kernel.cpp (eval): invstd = 1 / sqrt(var + eps) in double,
// alpha = invstd * w, beta = b - mean * alpha, y = x * alpha + beta.
void run_float_batch_norm(const OpArgs& a) {
  const Node& n = a.node;
  const Shape& shape = a.in().shape;
  const int64_t channels = shape[1], inner = num_elements(shape) / (shape[0] * channels);
  const float* w = a.graph.node_param(n, "bn_weight").data<float>();
  const float* b = a.graph.node_param(n, "bn_bias").data<float>();
  const float* mean = a.graph.node_param(n, "bn_running_mean").data<float>();
  const float* var = a.graph.node_param(n, "bn_running_var").data<float>();
  const double eps = n.float_attr("eps");
  const std::vector<float>& x = a.in_buf().f;
  std::vector<float>& y = a.out_buf().f;
  y.resize(x.size());
  for (int64_t c = 0; c < channels; ++c) {
    const auto invstd = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var[c]) + eps));
    const float alpha = invstd * w[c], beta = b[c] - mean[c] * alpha;
    for (int64_t batch = 0; batch < shape[0]; ++batch) {
      const int64_t base = (batch * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) y[base + i] = x[base + i] * alpha + beta;
    }
  }
}

// aten/src/ATen/native/cpu/group_norm_kernel.cpp: per (batch, group) mean and biased variance
// (here in double), rstd = 1 / sqrt(var + eps); per channel scale = rstd * w[c],
// bias = -scale * mean + b[c]; y = x * scale + bias.
void run_float_group_norm(const OpArgs& a) {
  const Shape& shape = a.in().shape;
  const int64_t batch = shape[0], channels = shape[1], groups = a.node.int_attr("num_groups");
  const int64_t spatial = num_elements(shape) / (batch * channels), per_group = channels / groups;
  const float* w = a.graph.node_param(a.node, "norm_weight").data<float>();
  const float* b = a.graph.node_param(a.node, "norm_bias").data<float>();
  const double eps = a.node.float_attr("eps");
  const std::vector<float>& x = a.in_buf().f;
  std::vector<float>& y = a.out_buf().f;
  y.resize(x.size());
  const int64_t group_size = per_group * spatial;
  for (int64_t row = 0; row < batch * groups; ++row) {
    const float* in = x.data() + row * group_size;
    double sum = 0.0, squares = 0.0;
    for (int64_t i = 0; i < group_size; ++i) sum += in[i];
    const double mean = sum / static_cast<double>(group_size);
    for (int64_t i = 0; i < group_size; ++i) squares += (in[i] - mean) * (in[i] - mean);
    const auto rstd = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(group_size) + eps));
    for (int64_t cg = 0; cg < per_group; ++cg) {
      const int64_t c = (row % groups) * per_group + cg;
      const float scale = rstd * w[c], bias = -scale * static_cast<float>(mean) + b[c];
      const int64_t base = row * group_size + cg * spatial;
      for (int64_t i = 0; i < spatial; ++i) y[base + i] = x[base + i] * scale + bias;
    }
  }
}

}  // namespace qnnpy

namespace qnnpy {
namespace {

// aten/src/ATen/native/GridSampler.h: grid_sampler_unnormalize, clip_coordinates, reflect_coordinates and
// grid_sampler_compute_source_index, in float32.
float grid_source_index(float coord, int64_t size, int64_t padding, bool align) {
  coord = align ? ((coord + 1) / 2) * static_cast<float>(size - 1) : ((coord + 1) * static_cast<float>(size) - 1) / 2;
  if (padding == 0) return coord;
  if (padding == 2) {
    // Reflected about the borders (the pixel centres with align_corners, else the image's edges), then clipped.
    const int64_t twice_low = align ? 0 : -1, twice_high = align ? 2 * (size - 1) : 2 * size - 1;
    if (twice_low == twice_high) return 0.0f;
    const float low = static_cast<float>(twice_low) / 2, span = static_cast<float>(twice_high - twice_low) / 2;
    const float in = std::fabs(coord - low);
    const float extra = std::fmod(in, span);
    const auto flips = static_cast<int64_t>(std::floor(in / span));
    coord = flips % 2 == 0 ? extra + low : span - extra + low;
  }
  return std::min(static_cast<float>(size - 1), std::max(coord, 0.0f));
}

}  // namespace

// aten/src/ATen/native/GridSampler.cpp (grid_sampler_2d_cpu_fallback): bilinear blends the four pixels around
// (ix, iy) with weights nw = (ix_se - ix)(iy_se - iy), ne, sw, se, in that order, skipping those outside the
// image; nearest takes the pixel at (rne(ix), rne(iy)); outside the image a tap reads 0.
void run_float_grid_sample(const OpArgs& a) {
  const Shape &x = a.in(0).shape, &g = a.in(1).shape;
  const int64_t n = x[0], c = x[1], h = x[2], w = x[3], oh = g[1], ow = g[2];
  const int64_t padding = a.node.int_attr("padding_mode");
  const bool align = a.node.int_attr("align_corners") != 0, nearest = a.node.int_attr("mode") == 1;
  const float* in = a.in_buf(0).f.data();
  const float* grid = a.in_buf(1).f.data();
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(n * c * oh * ow));
  auto inside = [&](int64_t yy, int64_t xx) { return yy >= 0 && yy < h && xx >= 0 && xx < w; };
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < oh * ow; ++p) {
      // Beyond one pixel outside the image every tap reads 0: clamped there (NaN too), the coordinates stay
      // within int64 and sample the same zeros.
      const float ix = std::fmin(std::fmax(grid_source_index(grid[(b * oh * ow + p) * 2], w, padding, align), -2.0f),
                                 static_cast<float>(w + 1));
      const float iy = std::fmin(std::fmax(grid_source_index(grid[(b * oh * ow + p) * 2 + 1], h, padding, align), -2.0f),
                                 static_cast<float>(h + 1));
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* plane = in + (b * c + ch) * h * w;
        float v = 0.0f;
        if (nearest) {
          const auto xn = static_cast<int64_t>(std::nearbyint(ix)), yn = static_cast<int64_t>(std::nearbyint(iy));
          if (inside(yn, xn)) v = plane[yn * w + xn];
        } else {
          const float x0 = std::floor(ix), y0 = std::floor(iy), x1 = x0 + 1, y1 = y0 + 1;
          const auto xw = static_cast<int64_t>(x0), yn = static_cast<int64_t>(y0);
          const float nw = (x1 - ix) * (y1 - iy), ne = (ix - x0) * (y1 - iy);
          const float sw = (x1 - ix) * (iy - y0), se = (ix - x0) * (iy - y0);
          if (inside(yn, xw)) v += plane[yn * w + xw] * nw;
          if (inside(yn, xw + 1)) v += plane[yn * w + xw + 1] * ne;
          if (inside(yn + 1, xw)) v += plane[(yn + 1) * w + xw] * sw;
          if (inside(yn + 1, xw + 1)) v += plane[(yn + 1) * w + xw + 1] * se;
        }
        y[((b * c + ch) * oh * ow) + p] = v;
      }
    }
  }
}

}  // namespace qnnpy
