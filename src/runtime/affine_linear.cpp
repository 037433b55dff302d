#include "runtime/affine_linear.h"

#include <algorithm>
#include <cmath>

#include "runtime/dynamic_qparams.h"
#include "runtime/float_dot.h"
#include "runtime/packed_weights.h"
#include "runtime/parallel.h"

namespace qnnpy {
namespace {

constexpr float kFloat32Eps = 1.1920928955078125e-07f;     // torch.finfo(torch.float32).eps
constexpr float kFloat32SmallestNormal = 1.17549435e-38f;  // torch.finfo(torch.float32).smallest_normal
constexpr int64_t kColumnsPerChunk = 16 * kGemmNR;  // a worker's share of the output columns, whole packed blocks

// min(min_k x, 0) and max(max_k x, 0) of a row (torchao's min_val_neg and max_val_pos).
void row_min_max(const float* x, int64_t k, float* lo, float* hi) {
  find_min_max(x, k, lo, hi);
  *lo = std::min(*lo, 0.0f);
  *hi = std::max(*hi, 0.0f);
}

// clamp(rne(v) + zero_point, -128, 127) of a float that holds at most a few hundred.
int32_t quantize_int8(float v, int32_t zero_point) {
  return std::clamp(static_cast<int32_t>(std::nearbyint(v)) + zero_point, -128, 127);
}

// Rows of k floats as torchao's asymmetric int8 tokens (activation 2, see affine_linear.h): q row-major, each
// row's scale and zero point.
struct AsymmetricRows {
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
};
AsymmetricRows quantize_rows_asymmetric(const float* x, int64_t rows, int64_t k) {
  AsymmetricRows t{std::vector<int8_t>(static_cast<size_t>(rows * k)), std::vector<float>(static_cast<size_t>(rows)),
                   std::vector<int32_t>(static_cast<size_t>(rows))};
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    float lo, hi;
    row_min_max(xr, k, &lo, &hi);
    const float s = std::max((hi - lo) / 255.0f, kFloat32SmallestNormal);
    const int32_t z = std::clamp(-128 - static_cast<int32_t>(std::nearbyint(lo / s)), -128, 127);
    const float inv = 1.0f / s;
    t.scale[r] = s;
    t.zero_point[r] = z;
    for (int64_t i = 0; i < k; ++i) t.q[r * k + i] = static_cast<int8_t>(quantize_int8(xr[i] * inv, z));
  }
  return t;
}

// The u8 x s8 GEMM of `rows` rows that is exact for any byte: the kernel set's where it is (VNNI, AMX; its
// GEMM for few rows where it has one), else the scalar one.
using Gemm = void (*)(const uint8_t*, int64_t, int64_t, const int8_t*, int64_t, int32_t*, int64_t);
Gemm exact_gemm(const KernelSet& k, int64_t rows) {
  if (!k.u8s8_exact) return scalar_kernels().gemm_u8s8;
  return rows < kFewRows && k.gemm_u8s8_few_rows ? k.gemm_u8s8_few_rows : k.gemm_u8s8;
}

// Calls fn(c0, c1) for chunks of the n output columns, each a run of whole packed column blocks, on the workers.
template <class Fn>
void column_chunks(int64_t n, int64_t work, int threads, Fn fn) {
  const int64_t chunks = (n + kColumnsPerChunk - 1) / kColumnsPerChunk;
  parallel_chunks(chunks, workers_for(work, 1 << 18, threads), [&](int64_t chunk, int) {
    const int64_t c0 = chunk * kColumnsPerChunk;
    fn(c0, std::min(n, c0 + kColumnsPerChunk));
  });
}

}  // namespace

void dequantize_affine_row(const int8_t* q, int64_t cols, int64_t group, const float* scale, const int8_t* zero_point,
                           const float* offset, float* out) {
  if (offset) {
    for (int64_t i = 0; i < cols; ++i) {
      out[i] = std::fma(static_cast<float>(q[i] - zero_point[i / group]), scale[i / group], offset[i / group]);
    }
    return;
  }
  for (int64_t i = 0; i < cols; ++i) out[i] = static_cast<float>(q[i] - zero_point[i / group]) * scale[i / group];
}

AffineLinear::AffineLinear(const Graph& g, const Node& n, Profile) {
  const Param& w = g.node_param(n, "weight");
  n_ = w.shape[0];
  k_ = w.shape[1];
  group_ = n.int_attr("group_size");
  activation_ = static_cast<int>(n.int_attr("activation"));
  scale_after_dot_ = n.int_attr("scale_after_dot") != 0;
  weight_ = w.data<int8_t>();
  weight_scale_ = g.node_param(n, "weight_scale").data<float>();
  weight_zero_point_ = g.node_param(n, "weight_zero_point").data<int8_t>();
  if (n.has_param("weight_offset")) weight_offset_ = g.node_param(n, "weight_offset").data<float>();
  bias_.assign(static_cast<size_t>(n_), 0.0f);
  if (n.has_param("bias")) {
    const float* b = g.node_param(n, "bias").data<float>();
    bias_.assign(b, b + n_);
  }
  if (activation_ == 0) return;
  int4_ = activation_ == 2 && group_ % 8 == 0 && n.int_attr("weight_bits") <= 4;  // values in [-8, 7] (the op's rule)
  const PackingKey key{"affine_linear", {&w, &g.node_param(n, "weight_scale"), &g.node_param(n, "weight_zero_point")},
                       {activation_, group_, int4_}};
  packed_ = shared_packing<Packed>(key, [this] { return pack(); });
  weight_ = nullptr;
  weight_scale_ = nullptr;
  weight_zero_point_ = nullptr;
}

int64_t AffineLinear::Packed::bytes() const {
  return static_cast<int64_t>(gemm.size() + weight_sums.size() * 4 + scale.size() * 4 + zero_point.size() * 4 + int4.size() +
                              int4_scale.size() * 4 + int4_zero_point.size() * 4);
}

std::vector<std::string> AffineLinear::packed_param_roles(const Node& n) {
  if (n.int_attr("activation") == 0) return {"bias"};
  return {"weight", "weight_scale", "weight_zero_point", "bias"};
}

std::shared_ptr<const AffineLinear::Packed> AffineLinear::pack() const {
  auto p = std::make_shared<Packed>();
  if (int4_) {
    pack_int4(*p);
    return p;
  }
  // Activation 1 packs whole rows (one group of k_), activation 2 each group of group_ columns on its own.
  const int64_t span = activation_ == 1 ? k_ : group_, groups = k_ / span;
  p->kq = (span + 3) / 4 * 4;
  const int64_t packed_size = packed_b_u8s8_size(p->kq, n_);
  p->gemm.resize(static_cast<size_t>(groups * packed_size));
  p->weight_sums.assign(static_cast<size_t>(groups * n_), 0);
  std::vector<int8_t> b(static_cast<size_t>(p->kq * n_));  // one group, k x n: the layout pack_b_u8s8 reads
  for (int64_t gi = 0; gi < groups; ++gi) {
    std::fill(b.begin(), b.end(), int8_t{0});
    for (int64_t c = 0; c < n_; ++c) {
      for (int64_t i = 0; i < span; ++i) {
        const int8_t v = weight_[c * k_ + gi * span + i];
        b[i * n_ + c] = v;
        p->weight_sums[gi * n_ + c] += v;
      }
    }
    pack_b_u8s8(b.data(), p->kq, n_, p->gemm.data() + gi * packed_size);
  }
  if (activation_ == 2) by_chunk(*p, groups, packed_size);
  else p->scale.assign(weight_scale_, weight_scale_ + n_);
  return p;
}

void AffineLinear::pack_int4(Packed& p) const {
  const int64_t groups = k_ / group_, blocks = (n_ + kInt4Block - 1) / kInt4Block;
  p.int4.resize(static_cast<size_t>(packed_int4_size(k_, n_)));
  pack_int4_groups(weight_, n_, k_, p.int4.data());
  p.int4_scale.assign(static_cast<size_t>(blocks * groups * kInt4Block), 0.0f);
  const bool zero_points = std::any_of(weight_zero_point_, weight_zero_point_ + n_ * groups, [](int8_t z) { return z != 0; });
  if (zero_points) p.int4_zero_point.assign(p.int4_scale.size(), 0);
  for (int64_t c = 0; c < n_; ++c)
    for (int64_t gi = 0; gi < groups; ++gi) {
      const int64_t at = (c / kInt4Block * groups + gi) * kInt4Block + c % kInt4Block;
      p.int4_scale[at] = weight_scale_[c * groups + gi];
      if (zero_points) p.int4_zero_point[at] = weight_zero_point_[c * groups + gi];
    }
}

int64_t AffineLinear::chunk_bytes(int64_t kq, int64_t c0) const {
  const int64_t padded_n = packed_b_u8s8_size(kq, n_) / kq;
  return (std::min(padded_n, c0 + kColumnsPerChunk) - c0) * kq;
}

void AffineLinear::by_chunk(Packed& p, int64_t groups, int64_t packed_size) const {
  std::vector<int8_t> packed(p.gemm.size());
  std::vector<int32_t> sums(p.weight_sums.size());
  p.scale.resize(static_cast<size_t>(groups * n_));
  p.zero_point.resize(static_cast<size_t>(groups * n_));
  for (int64_t c0 = 0; c0 < n_; c0 += kColumnsPerChunk) {
    const int64_t width = std::min(n_, c0 + kColumnsPerChunk) - c0, bytes = chunk_bytes(p.kq, c0);
    for (int64_t gi = 0; gi < groups; ++gi) {
      std::copy_n(p.gemm.data() + gi * packed_size + c0 * p.kq, bytes, packed.data() + c0 * groups * p.kq + gi * bytes);
      for (int64_t j = 0; j < width; ++j) {
        const int64_t at = c0 * groups + gi * width + j, c = c0 + j;
        sums[at] = p.weight_sums[gi * n_ + c];
        p.scale[at] = weight_scale_[c * groups + gi];
        p.zero_point[at] = weight_zero_point_[c * groups + gi];
      }
    }
  }
  p.gemm = std::move(packed);
  p.weight_sums = std::move(sums);
}

const char* AffineLinear::run(const OpArgs& a) const {
  const std::vector<float>& x = a.in_buf().f;
  const int64_t rows = static_cast<int64_t>(x.size()) / k_;
  std::vector<float>& y = a.out_buf().f;
  y.resize(static_cast<size_t>(rows * n_));
  if (activation_ == 1) return run_dynamic_int8(a, x.data(), rows, y.data());
  if (activation_ == 2) {
    return int4_ ? run_grouped_int4(a, x.data(), rows, y.data()) : run_grouped_int8(a, x.data(), rows, y.data());
  }
  run_float(a, x.data(), rows, y.data());
  return "float_dot";
}

const char* AffineLinear::run_dynamic_int8(const OpArgs& a, const float* x, int64_t rows, float* y) const {
  const Packed& p = *packed_;
  std::vector<uint8_t> q(static_cast<size_t>(rows * p.kq), 0);  // q + 128; the padding multiplies zero weights
  std::vector<float> row_scale(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k_;
    float lo, hi;
    row_min_max(xr, k_, &lo, &hi);
    const float s = std::max(std::max(-lo, hi) / 127.5f, kFloat32Eps);
    const float inv = 1.0f / s;
    row_scale[r] = s;
    for (int64_t i = 0; i < k_; ++i) q[r * p.kq + i] = static_cast<uint8_t>(quantize_int8(xr[i] * inv, 0) + 128);
  }
  const Gemm gemm = exact_gemm(a.k, rows);
  column_chunks(n_, rows * n_ * k_, a.threads, [&](int64_t c0, int64_t c1) {
    std::vector<int32_t> acc(static_cast<size_t>(rows * (c1 - c0)));
    gemm(q.data(), rows, p.kq, p.gemm.data() + c0 * p.kq, c1 - c0, acc.data(), c1 - c0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = c0; c < c1; ++c) {
        const int32_t sum = acc[r * (c1 - c0) + c - c0] - 128 * p.weight_sums[c];
        const float v = (static_cast<float>(sum) * row_scale[r]) * p.scale[c];
        y[r * n_ + c] = v + bias_[c];
      }
    }
  });
  return a.k.u8s8_exact ? "gemm_u8s8" : "gemm_u8s8_scalar";
}

const char* AffineLinear::run_grouped_int8(const OpArgs& a, const float* x, int64_t rows, float* y) const {
  const Packed& p = *packed_;
  const int64_t groups = k_ / group_, kq = p.kq;
  // The quantized rows laid out group by group ([g][r][kq], q + 128, padding 0) and each group's sum of q.
  const AsymmetricRows t = quantize_rows_asymmetric(x, rows, k_);
  std::vector<uint8_t> q(static_cast<size_t>(groups * rows * kq), 0);
  std::vector<int32_t> q_sums(static_cast<size_t>(rows * groups), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k_; ++i) {
      const int64_t gi = i / group_;
      const int32_t v = t.q[r * k_ + i];
      q[(gi * rows + r) * kq + i % group_] = static_cast<uint8_t>(v + 128);
      q_sums[r * groups + gi] += v;
    }
  }
  const Gemm gemm = exact_gemm(a.k, rows);
  column_chunks(n_, rows * n_ * k_, a.threads, [&](int64_t c0, int64_t c1) {
    const int64_t width = c1 - c0, bytes = chunk_bytes(kq, c0);
    std::vector<int32_t> acc(static_cast<size_t>(rows * width));
    std::vector<float> sum(static_cast<size_t>(rows * width), 0.0f);
    for (int64_t gi = 0; gi < groups; ++gi) {
      gemm(q.data() + gi * rows * kq, rows, kq, p.gemm.data() + c0 * groups * kq + gi * bytes, width, acc.data(), width);
      const int64_t at = c0 * groups + gi * width;
      for (int64_t r = 0; r < rows; ++r) {
        const int32_t zx = t.zero_point[r], qs = q_sums[r * groups + gi];
        // sum (q - zx)(w - zw) = sum (q + 128) w - (128 + zx) W - zw (Q - group zx), W and Q the group's sums.
        const GroupSumParams sums{p.weight_sums.data() + at, p.zero_point.data() + at, p.scale.data() + at, 128 + zx,
                                  qs - static_cast<int32_t>(group_) * zx};
        a.k.add_group_sums(acc.data() + r * width, width, sums, sum.data() + r * width);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = c0; c < c1; ++c) y[r * n_ + c] = sum[r * width + c - c0] * t.scale[r] + bias_[c];
    }
  });
  return a.k.u8s8_exact ? "gemm_u8s8_groups" : "gemm_u8s8_groups_scalar";
}

const char* AffineLinear::run_grouped_int4(const OpArgs& a, const float* x, int64_t rows, float* y) const {
  const Packed& p = *packed_;
  const int64_t groups = k_ / group_;
  const AsymmetricRows t = quantize_rows_asymmetric(x, rows, k_);
  std::vector<int32_t> centered(static_cast<size_t>(rows * groups), 0);  // each group's sum of q - zx
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k_; ++i) centered[r * groups + i / group_] += t.q[r * k_ + i] - t.zero_point[r];
  }
  column_chunks(n_, rows * n_ * k_, a.threads, [&](int64_t c0, int64_t c1) {
    const int64_t width = c1 - c0, block = c0 / kInt4Block;
    std::vector<float> sum(static_cast<size_t>(rows * width));
    const Int4Groups args{t.q.data(), centered.data(), t.zero_point.data(), rows, k_, group_,
                          p.int4.data() + block * 8 * k_, p.int4_scale.data() + block * groups * kInt4Block,
                          p.int4_zero_point.empty() ? nullptr : p.int4_zero_point.data() + block * groups * kInt4Block,
                          width, sum.data(), width};
    a.k.int4_group_sums(args);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = c0; c < c1; ++c) y[r * n_ + c] = sum[r * width + c - c0] * t.scale[r] + bias_[c];
    }
  });
  return "int4_group_sums";
}

void AffineLinear::run_float(const OpArgs& a, const float* x, int64_t rows, float* y) const {
  const int64_t groups = k_ / group_;
  parallel_chunks(n_, workers_for(rows * n_ * k_, 1 << 20, a.threads), [&](int64_t c, int) {
    std::vector<float> w(static_cast<size_t>(k_));  // row c: its raw values, or dequantized
    const int8_t* wr = weight_ + c * k_;
    if (scale_after_dot_) {
      std::copy(wr, wr + k_, w.begin());
    } else {
      dequantize_affine_row(wr, k_, group_, weight_scale_ + c * groups, weight_zero_point_ + c * groups,
                            weight_offset_ ? weight_offset_ + c * groups : nullptr, w.data());
    }
    for (int64_t r = 0; r < rows; ++r) {
      float v = interleaved_dot<16>(x + r * k_, w.data(), k_);
      if (scale_after_dot_) v *= weight_scale_[c];
      y[r * n_ + c] = v + bias_[c];
    }
  });
}

}  // namespace qnnpy
