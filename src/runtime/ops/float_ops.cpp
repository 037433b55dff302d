#include <algorithm>
#include <cmath>

#include "runtime/ops/plain_values.h"
#include "runtime/ops/float_runners.h"
#include "runtime/ops/float_spatial_runners.h"

namespace qnnpy {

void run_float_clamp(const OpArgs& a) {
  const float lo = static_cast<float>(a.node.float_attr("min")), hi = static_cast<float>(a.node.float_attr("max"));
  float_unary(a, [=](float x) { return std::min(std::max(x, lo), hi); });
}

void run_float_adaptive_avg_pool2d(const OpArgs& a) {
  a.out_buf().f.resize(static_cast<size_t>(a.out_count()));
  float_adaptive_avg_pool2d(a.in().shape, a.in_buf().f.data(), a.out().shape, a.out_buf().f.data());
}

}  // namespace qnnpy
