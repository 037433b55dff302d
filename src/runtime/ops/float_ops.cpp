#include <algorithm>
#include <cmath>

#include "runtime/ops/float_elementwise.h"
#include "runtime/ops/float_runners.h"

namespace qnnpy {
namespace {

// relu6(x + 3), PyTorch's hardsigmoid / hardswish numerator.
float relu6_plus_3(float x) { return std::min(std::max(x + 3.0f, 0.0f), 6.0f); }

}  // namespace

void run_float_add(const OpArgs& a) { float_binary(a, [](float x, float y) { return x + y; }); }
void run_float_mul(const OpArgs& a) { float_binary(a, [](float x, float y) { return x * y; }); }
void run_float_relu(const OpArgs& a) { float_unary(a, [](float x) { return std::max(x, 0.0f); }); }

void run_float_clamp(const OpArgs& a) {
  const float lo = static_cast<float>(a.node.float_attr("min")), hi = static_cast<float>(a.node.float_attr("max"));
  float_unary(a, [=](float x) { return std::min(std::max(x, lo), hi); });
}

void run_float_hardsigmoid(const OpArgs& a) { float_unary(a, [](float x) { return relu6_plus_3(x) / 6.0f; }); }
void run_float_hardswish(const OpArgs& a) { float_unary(a, [](float x) { return x * relu6_plus_3(x) / 6.0f; }); }

// PyTorch's adaptive average pooling windows: [floor(o * in / out), ceil((o + 1) * in / out)).
void run_float_adaptive_avg_pool2d(const OpArgs& a) {
  const Shape &xs = a.in().shape, &ys = a.out().shape;
  const float* x = a.in_buf().f.data();
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(num_elements(ys)));
  const int64_t ih = xs[2], iw = xs[3], oh = ys[2], ow = ys[3];
  for (int64_t p = 0; p < xs[0] * xs[1]; ++p) {
    const float* plane = x + p * ih * iw;
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t r0 = i * ih / oh, r1 = ((i + 1) * ih + oh - 1) / oh;
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t c0 = j * iw / ow, c1 = ((j + 1) * iw + ow - 1) / ow;
        float sum = 0.0f;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) sum += plane[r * iw + c];
        y[(p * oh + i) * ow + j] = sum / static_cast<float>((r1 - r0) * (c1 - c0));
      }
    }
  }
}

void run_float_reshape(const OpArgs& a) { a.out_buf().f = a.in_buf().f; }

// Concatenation along "axis" of the inputs' logical (NCHW) float32 values.
void run_float_cat(const OpArgs& a) {
  const Shape& out = a.out().shape;
  const auto axis = static_cast<size_t>(a.node.int_attr("axis") + (a.node.int_attr("axis") < 0 ? out.size() : 0));
  int64_t inner = 1;
  for (size_t d = axis + 1; d < out.size(); ++d) inner *= out[d];
  const int64_t outer = num_elements(out) / (out[axis] * inner);
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(a.out_count()));
  int64_t offset = 0;  // where input i's block starts along the axis
  for (size_t i = 0; i < a.node.inputs.size(); ++i) {
    const int64_t block = a.in(i).shape[axis] * inner;
    const std::vector<float>& x = a.in_buf(i).f;
    for (int64_t o = 0; o < outer; ++o) {
      std::copy(x.begin() + o * block, x.begin() + (o + 1) * block, y.begin() + o * out[axis] * inner + offset);
    }
    offset += block;
  }
}

}  // namespace qnnpy
