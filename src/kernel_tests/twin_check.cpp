#include "kernel_tests/twin_check.h"

#include <cstdio>
#include <cstring>

namespace qnnpy::kernel_tests {

std::vector<uint8_t> TwinContext::bytes(int64_t n, int lo, int hi) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (auto& b : v) b = static_cast<uint8_t>(uniform(lo, hi));
  return v;
}

template <class T>
void TwinContext::expect_equal(const std::vector<T>& want, const std::vector<T>& got, const std::string& what) {
  ++checks;
  if (want.size() == got.size() && std::memcmp(want.data(), got.data(), want.size() * sizeof(T)) == 0) return;
  ++failures;
  size_t i = 0;
  while (i < want.size() && i < got.size() && std::memcmp(&want[i], &got[i], sizeof(T)) == 0) ++i;
  if (i < want.size() && i < got.size()) {
    std::printf("FAIL %s [%s]: element %zu: scalar %lld, %s %lld\n", what.c_str(), isa_name(isa), i,
                static_cast<long long>(want[i]), isa_name(isa), static_cast<long long>(got[i]));
  } else {
    std::printf("FAIL %s [%s]: sizes %zu and %zu\n", what.c_str(), isa_name(isa), want.size(), got.size());
  }
}

template void TwinContext::expect_equal(const std::vector<uint8_t>&, const std::vector<uint8_t>&, const std::string&);
template void TwinContext::expect_equal(const std::vector<int32_t>&, const std::vector<int32_t>&, const std::string&);
template void TwinContext::expect_equal(const std::vector<int64_t>&, const std::vector<int64_t>&, const std::string&);
template void TwinContext::expect_equal(const std::vector<int16_t>&, const std::vector<int16_t>&, const std::string&);

int run_twin_checks(Isa isa, uint64_t seed) {
  TwinContext ctx{scalar_kernels(), kernel_set(isa), isa, std::mt19937_64(seed)};
  const bool amx = isa == Isa::Amx || isa == Isa::AmxModel;
  const struct {
    const char* name;
    void (*run)(TwinContext&);
  } families[] = {{"gemm", twin_gemm},
                  {"requantize", twin_requantize},
                  {"depthwise", twin_depthwise},
                  {"elementwise", twin_elementwise},
                  {"pool", twin_pool},
                  {"winograd", twin_winograd},
                  {"tiles", amx ? twin_tiles : nullptr}};
  for (const auto& f : families) {
    if (!f.run) continue;
    const int before_checks = ctx.checks, before_failures = ctx.failures;
    f.run(ctx);
    std::printf("%s %s: %d checks, %d failed\n", isa_name(isa), f.name, ctx.checks - before_checks,
                ctx.failures - before_failures);
  }
  return ctx.failures;
}

}  // namespace qnnpy::kernel_tests
