#include "runtime/profile.h"

#include <stdexcept>

namespace qnnpy {

Profile parse_profile(const std::string& name) {
  if (name == "int32_bias") return Profile::Int32Bias;
  if (name == "fbgemm") return Profile::Fbgemm;
  if (name == "fixed_point") return Profile::FixedPoint;
  if (name == "qnnpack") return Profile::Qnnpack;
  throw std::invalid_argument("unknown profile '" + name + "' (expected int32_bias, fbgemm, fixed_point or qnnpack)");
}

const char* profile_name(Profile p) {
  switch (p) {
    case Profile::Int32Bias:
      return "int32_bias";
    case Profile::Fbgemm:
      return "fbgemm";
    case Profile::FixedPoint:
      return "fixed_point";
    case Profile::Qnnpack:
      return "qnnpack";
  }
  return "unknown";
}

}  // namespace qnnpy
