#include "runtime/profile.h"

#include <stdexcept>

namespace qnnpy {

Profile parse_profile(const std::string& name) {
  if (name == "int32_bias") return Profile::Int32Bias;
  if (name == "fbgemm") return Profile::Fbgemm;
  if (name == "fixed_point") return Profile::FixedPoint;
  throw std::invalid_argument("unknown profile '" + name + "' (expected int32_bias, fbgemm or fixed_point)");
}

const char* profile_name(Profile p) {
  switch (p) {
    case Profile::Int32Bias:
      return "int32_bias";
    case Profile::Fbgemm:
      return "fbgemm";
    case Profile::FixedPoint:
      return "fixed_point";
  }
  return "unknown";
}

}  // namespace qnnpy
