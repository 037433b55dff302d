#include "runtime/profile.h"

#include <stdexcept>

namespace qnnpy {

Profile parse_profile(const std::string& name) {
  if (name == "int32_bias") return Profile::Int32Bias;
  if (name == "fbgemm") return Profile::Fbgemm;
  if (name == "fixed_point") return Profile::FixedPoint;
  if (name == "qnnpack") return Profile::Qnnpack;
  if (name == "onednn") return Profile::Onednn;
  if (name == "onednn_amx") return Profile::OnednnAmx;
  if (name == "x86") return Profile::X86;
  if (name == "x86_amx") return Profile::X86Amx;
  throw std::invalid_argument("unknown profile '" + name +
                              "' (expected int32_bias, fbgemm, fixed_point, qnnpack, onednn, onednn_amx, x86 or x86_amx)");
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
    case Profile::Onednn:
      return "onednn";
    case Profile::OnednnAmx:
      return "onednn_amx";
    case Profile::X86:
      return "x86";
    case Profile::X86Amx:
      return "x86_amx";
  }
  return "unknown";
}

}  // namespace qnnpy
