#include "runtime/profile.h"

#include <stdexcept>

namespace qnnpy {
namespace {

// Every profile and its name, in the order the error message lists them.
constexpr struct {
  Profile profile;
  const char* name;
} kProfiles[] = {{Profile::Int32Bias, "int32_bias"}, {Profile::Fbgemm, "fbgemm"},         {Profile::FixedPoint, "fixed_point"},
                 {Profile::Qnnpack, "qnnpack"},      {Profile::Onednn, "onednn"},         {Profile::OnednnAmx, "onednn_amx"},
                 {Profile::X86, "x86"},              {Profile::X86Amx, "x86_amx"}};

}  // namespace

Profile parse_profile(const std::string& name) {
  std::string names;
  const size_t count = sizeof(kProfiles) / sizeof(kProfiles[0]);
  for (size_t i = 0; i < count; ++i) {
    if (name == kProfiles[i].name) return kProfiles[i].profile;
    names += (i == 0 ? "" : i + 1 == count ? " or " : ", ") + std::string(kProfiles[i].name);
  }
  throw std::invalid_argument("unknown profile '" + name + "' (expected " + names + ")");
}

const char* profile_name(Profile p) {
  for (const auto& entry : kProfiles)
    if (entry.profile == p) return entry.name;
  return "unknown";
}

}  // namespace qnnpy
