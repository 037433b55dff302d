#include "runtime/profile.h"

#include <stdexcept>

namespace qnnpy {

Profile parse_profile(const std::string& name) {
  if (name == "int32_bias") return Profile::Int32Bias;
  if (name == "fbgemm") return Profile::Fbgemm;
  throw std::invalid_argument("unknown profile '" + name + "' (expected int32_bias or fbgemm)");
}

const char* profile_name(Profile p) { return p == Profile::Fbgemm ? "fbgemm" : "int32_bias"; }

}  // namespace qnnpy
