#include "runtime/dynamic_qparams.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace qnnpy {

namespace {
constexpr float kSmallScaleThreshold = 6.1e-5f;  // SMALL_SCALE_THRESHOLD in QuantUtils.h
}  // namespace

int32_t dynamic_qmax(bool reduce_range) { return reduce_range ? 255 / 2 : 255; }

void find_min_max(const float* x, int64_t n, float* min, float* max) {
  if (n <= 0) throw std::invalid_argument("find_min_max: empty tensor");
  float lo = x[0], hi = x[0];
  for (int64_t i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *min = lo;
  *max = hi;
}

DynamicQParams choose_dynamic_qparams(float min, float max, bool reduce_range) {
  if (!(min <= max)) throw std::invalid_argument("dynamic qparams: min must be <= max (NaN in the input?)");
  const int32_t qmin = kDynamicQmin, qmax = dynamic_qmax(reduce_range);
  min = std::min(min, 0.f);
  max = std::max(max, 0.f);
  double scale = (static_cast<double>(max) - min) / (qmax - qmin);
  if (static_cast<float>(scale) == 0.0f || std::isinf(1.0f / static_cast<float>(scale))) scale = 0.1;
  if (scale < kSmallScaleThreshold) {
    const float original = static_cast<float>(scale);
    scale = kSmallScaleThreshold;
    if (min == 0.0f) {
      max = kSmallScaleThreshold * (qmax - qmin);
    } else if (max == 0.0f) {
      min = -kSmallScaleThreshold * (qmax - qmin);
    } else {
      const float amplifier = kSmallScaleThreshold / original;
      min *= amplifier;
      max *= amplifier;
    }
  }
  const double from_min = qmin - min / scale;
  const double from_max = qmax - max / scale;
  const double from_min_error = std::abs(qmin) - std::abs(min / scale);
  const double from_max_error = std::abs(qmax) - std::abs(max / scale);
  const double initial = from_min_error < from_max_error ? from_min : from_max;
  int32_t zero_point;
  if (initial < qmin) {
    zero_point = qmin;
  } else if (initial > qmax) {
    zero_point = qmax;
  } else {
    zero_point = static_cast<int32_t>(std::nearbyint(initial));
  }
  return {static_cast<float>(scale), zero_point};
}

}  // namespace qnnpy
