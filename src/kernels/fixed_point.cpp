#include "kernels/fixed_point.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace qnnpy {

QuantizedMultiplier quantize_multiplier(double m) {
  if (!(m >= 0.0) || std::isinf(m)) {
    std::ostringstream msg;
    msg.precision(17);
    msg << "fixed-point multiplier must be finite and >= 0, got " << m;
    throw std::invalid_argument(msg.str());
  }
  if (m == 0.0) return {0, 0};
  int shift = 0;
  const double q = std::frexp(m, &shift);
  int64_t q_fixed = static_cast<int64_t>(std::round(q * static_cast<double>(int64_t{1} << 31)));
  if (q_fixed == (int64_t{1} << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) return {0, 0};
  if (shift > 30) {
    std::ostringstream msg;
    msg.precision(17);
    msg << "fixed-point multiplier " << m << " is too large (shift " << shift << " > 30)";
    throw std::invalid_argument(msg.str());
  }
  return {static_cast<int32_t>(q_fixed), shift};
}

}  // namespace qnnpy
