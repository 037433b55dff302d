// The runner of float_attention (ops/float_attention.cpp). Per query row l of head h (key / value head
// h / (Hq / Hk)):
//   s[j] = fl(dot(q[l], k[j]) * scale), the dot in 8 interleaved partial sums added pairwise (one fixed order:
//          the kernel set's float_dots, kernels.h)
//   s[j] = -inf where the bool mask is false or (causal) j > l;  s[j] = s[j] + mask[j] for a float mask
//   p = softmax(s): m = max(s), e = exp(s - m), p = e * (1 / sum(e)), the sum in index order (as float_softmax)
//   out[l] = sum over j in index order of p[j] * v[j] (the kernel set's weighted_rows)
// PyTorch's math path scales q and k by sqrt(scale) each before their matmul and sums in its BLAS's order, so the
// two agree to float rounding, not bit for bit. A row with every position left out gives zeros, as PyTorch's math
// path (its _safe_softmax). Positions of weight 0 (left out, or underflowed) are skipped, so a value there that is
// not finite does not reach the output, where PyTorch's 0 * inf would give NaN.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "runtime/ops/float_transformer_runners.h"
#include "runtime/ops/plain_values.h"
#include "runtime/parallel.h"

namespace qnnpy {
namespace {

// The strides that read a mask of shape `mask` broadcast to (N, Hq, L, S): 0 along an axis it broadcasts.
std::vector<int64_t> broadcast_strides(const Shape& mask, const Shape& scores) {
  std::vector<int64_t> strides(scores.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < mask.size(); ++i) {
    const int64_t extent = mask[mask.size() - 1 - i];
    strides[scores.size() - 1 - i] = extent == 1 ? 0 : stride;
    stride *= extent;
  }
  return strides;
}

}  // namespace

void run_float_attention(const OpArgs& a) {
  const Shape &qs = a.in(0).shape, &ks = a.in(1).shape, &vs = a.in(2).shape;
  const int64_t n_size = qs[0], heads = qs[1], rows = qs[2], e_size = qs[3], kv_heads = ks[1], positions = ks[2],
                ev = vs[3], group = heads / kv_heads;
  const auto scale = static_cast<float>(a.node.float_attr("scale"));
  const bool causal = a.node.int_attr("causal") != 0, masked = a.node.inputs.size() == 4;
  const bool bool_mask = masked && a.in(3).dtype == DType::Bool;
  const Shape scores_shape{n_size, heads, rows, positions};
  const std::vector<int64_t> mask_strides = masked ? broadcast_strides(a.in(3).shape, scores_shape) : std::vector<int64_t>(4, 0);
  const float* q = a.in_buf(0).f.data();
  const float* k = a.in_buf(1).f.data();
  const float* v = a.in_buf(2).f.data();
  const float* float_mask = masked && !bool_mask ? a.in_buf(3).f.data() : nullptr;
  const int64_t* bool_values = bool_mask ? a.in_buf(3).idx.data() : nullptr;
  std::vector<float>& out = a.out_buf().f;
  out.resize(static_cast<size_t>(a.out_count()));
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  const auto dots = a.k.float_dots ? a.k.float_dots : scalar_kernels().float_dots;
  const auto weighted = a.k.weighted_rows ? a.k.weighted_rows : scalar_kernels().weighted_rows;
  const int64_t work = n_size * heads * rows * positions * (e_size + ev);
  parallel_chunks(n_size * heads, workers_for(work, 1 << 16, a.threads), [&](int64_t nh, int) {
    const int64_t n = nh / heads, h = nh % heads, kv = n * kv_heads + h / group;
    const float* keys = k + kv * positions * e_size;
    const float* values = v + kv * positions * ev;
    std::vector<float> s(static_cast<size_t>(positions)), weights(static_cast<size_t>(positions));
    std::vector<uint8_t> kept(static_cast<size_t>(positions));
    for (int64_t l = 0; l < rows; ++l) {
      const float* query = q + (nh * rows + l) * e_size;
      const int64_t mask_row = n * mask_strides[0] + h * mask_strides[1] + l * mask_strides[2];
      for (int64_t j = 0; j < positions; ++j) {
        kept[j] = !((bool_values != nullptr && bool_values[mask_row + j * mask_strides[3]] == 0) || (causal && j > l) ||
                    (float_mask != nullptr && float_mask[mask_row + j * mask_strides[3]] == kMinusInf));
      }
      // A position left out weighs exactly 0: neither its dot product nor its value is computed. The dots of
      // each run of kept positions in one call.
      for (int64_t j = 0; j < positions;) {
        if (!kept[j]) {
          s[j++] = kMinusInf;
          continue;
        }
        int64_t end = j;
        while (end < positions && kept[end]) ++end;
        dots(query, keys + j * e_size, e_size, end - j, e_size, s.data() + j);
        for (; j < end; ++j) {
          s[j] *= scale;
          if (float_mask != nullptr) s[j] += float_mask[mask_row + j * mask_strides[3]];
        }
      }
      const float m = *std::max_element(s.begin(), s.end());
      float* dst = out.data() + (nh * rows + l) * ev;
      if (m == kMinusInf) {
        std::fill(dst, dst + ev, 0.0f);
        continue;
      }
      float sum = 0.0f;
      for (float& x : s) {
        x = x == kMinusInf ? 0.0f : std::exp(x - m);  // exp(-inf) is 0: no call for a position left out
        sum += x;
      }
      const float reciprocal = 1.0f / sum;
      // Weight 0 (a position left out, or one whose weight underflowed) skips the position's value row.
      for (int64_t j = 0; j < positions; ++j) weights[j] = s[j] * reciprocal;
      weighted(weights.data(), values, ev, positions, ev, dst);
    }
  });
}

}  // namespace qnnpy
