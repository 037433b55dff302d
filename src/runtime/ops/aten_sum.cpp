#include "runtime/ops/aten_sum.h"

#include <algorithm>
#include <array>

namespace qnnpy {
namespace {

constexpr int64_t kLanes = 8;   // Vectorized<float>::size() of PyTorch's sum kernel here
constexpr int kInterleave = 4;  // row_sum's ilp_factor
constexpr int kLevels = 4;      // multi_row_sum's num_levels

template <int L>
using Lanes = std::array<float, L>;

template <int L>
void add_lanes(Lanes<L>& acc, const float* v) {
  for (int l = 0; l < L; ++l) acc[l] += v[l];
}

// ceil(log2(x)), 1 for x <= 2 (ATen's utils::CeilLog2).
int64_t ceil_log2(int64_t x) {
  if (x <= 2) return 1;
  int64_t bits = 0;
  for (uint64_t v = static_cast<uint64_t>(x - 1); v; v >>= 1) ++bits;
  return bits;
}

// multi_row_sum: kInterleave running sums of `size` terms (term(i, k): L floats), each step of
// 2^power terms folded into the next level, a level folded on when its count wraps.
template <int L, typename Term>
std::array<Lanes<L>, kInterleave> multi_row_sum(int64_t size, Term term) {
  const int64_t power = std::max<int64_t>(4, ceil_log2(size) / kLevels);
  const int64_t step = int64_t{1} << power, mask = step - 1;
  std::array<std::array<Lanes<L>, kInterleave>, kLevels> acc{};
  int64_t i = 0;
  while (i + step <= size) {
    for (int64_t j = 0; j < step; ++j, ++i)
      for (int k = 0; k < kInterleave; ++k) add_lanes<L>(acc[0][k], term(i, k));
    for (int j = 1; j < kLevels; ++j) {
      for (int k = 0; k < kInterleave; ++k) {
        add_lanes<L>(acc[j][k], acc[j - 1][k].data());
        acc[j - 1][k].fill(0.0f);
      }
      if ((i & (mask << (j * power))) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (int k = 0; k < kInterleave; ++k) add_lanes<L>(acc[0][k], term(i, k));
  for (int j = 1; j < kLevels; ++j)
    for (int k = 0; k < kInterleave; ++k) add_lanes<L>(acc[0][k], acc[j][k].data());
  return acc[0];
}

// row_sum: the `count` terms of L floats at x read as kInterleave interleaved rows, the leftover
// terms added to the first, then the rows added in order.
template <int L>
Lanes<L> row_sum(const float* x, int64_t count) {
  const int64_t groups = count / kInterleave;
  auto partial = multi_row_sum<L>(groups, [&](int64_t i, int k) { return x + (i * kInterleave + k) * L; });
  for (int64_t i = groups * kInterleave; i < count; ++i) add_lanes<L>(partial[0], x + i * L);
  for (int k = 1; k < kInterleave; ++k) add_lanes<L>(partial[0], partial[k].data());
  return partial[0];
}

}  // namespace

float aten_contiguous_sum(const float* x, int64_t n) {
  if (n < kLanes) return row_sum<1>(x, n)[0];
  const int64_t vectors = n / kLanes;
  const Lanes<kLanes> lanes = row_sum<kLanes>(x, vectors);
  float sum = 0.0f;
  for (int64_t i = vectors * kLanes; i < n; ++i) sum += x[i];
  for (float v : lanes) sum += v;
  return sum;
}

}  // namespace qnnpy
