// qnnpy_kernel_tests: the C++ test driver of the kernels and the runtime, without Python,
// so that it also runs where the Python package is not built (a cross build under
// qemu-user, tests/test_cross_aarch64.py).
//   qnnpy_kernel_tests info                      the CPU features and the ISAs built and runnable
//   qnnpy_kernel_tests twins [ISA...] [--seed N] every kernel of each SIMD ISA (default: all the
//                                                CPU runs) against the scalar kernels; exit 1 on a mismatch
//   qnnpy_kernel_tests run GRAPH INPUT OUTPUT PROFILE ISA [THREADS]   see run_graph.h
//   qnnpy_kernel_tests pool                      checks of the worker pool (pool_check.h); exit 1 on a failure
//   qnnpy_kernel_tests peak [SECONDS]            the u8 x s8 MAC ceilings of one core (x86-64: AVX2, vpdpbusd on
//                                                zmm and ymm, AMX tdpbusd; 0 where the CPU or build has none)
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "kernel_tests/pool_check.h"
#include "kernel_tests/run_graph.h"
#include "kernel_tests/twin_check.h"
#include "kernels/peaks.h"

namespace qnnpy::kernel_tests {
namespace {

int info() {
  std::printf("default_isa %s\ncpu_has_avx2 %d\ncpu_has_avx_vnni %d\ncpu_has_neon_dot %d\nsimd_isas",
              isa_name(default_isa()), cpu_has_avx2(), cpu_has_avx_vnni(), cpu_has_neon_dot());
  for (Isa isa : runnable_simd_isas()) std::printf(" %s", isa_name(isa));
  const std::string amx = amx_unavailable_reason();
  std::printf("\namx %s\n", amx.empty() ? "available" : ("unavailable: " + amx).c_str());
  return 0;
}

// GMAC/s of each register-only loop (kernels/*/peak.cpp), one core, the fastest of many blocks.
int peak(double seconds) {
#if defined(__x86_64__) && defined(QNNPY_AVX2_KERNELS)
  std::printf("peak_u8s8_avx2_gmacs %.1f\n", peak_u8s8_gmacs(seconds));
  std::printf("peak_vpdpbusd_zmm_gmacs %.1f\n", peak_vnni_gmacs(seconds));
#if defined(QNNPY_AVXVNNI_KERNELS)
  std::printf("peak_vpdpbusd_ymm_gmacs %.1f\n", peak_avxvnni_gmacs(seconds));
#endif
#if defined(QNNPY_AMX_KERNELS)
  std::printf("peak_tdpbusd_gmacs %.1f\n", peak_amx_gmacs(seconds));
#endif
#else
  (void)seconds;
  std::printf("no peak loops for this architecture\n");
#endif
  return 0;
}

int twins(const std::vector<std::string>& args) {
  uint64_t seed = 1;
  std::vector<Isa> isas;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--seed" && i + 1 < args.size()) {
      seed = std::strtoull(args[++i].c_str(), nullptr, 10);
    } else {
      isas.push_back(parse_isa(args[i]));
    }
  }
  if (isas.empty()) isas = runnable_simd_isas();
  if (isas.empty()) {
    std::printf("no SIMD kernels built for this architecture or run by this CPU: nothing to compare\n");
    return 0;
  }
  int failures = 0;
  for (Isa isa : isas) failures += run_twin_checks(isa, seed);
  std::printf(failures ? "twins: %d FAILED\n" : "twins: all passed\n", failures);
  return failures ? 1 : 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: qnnpy_kernel_tests info\n"
               "       qnnpy_kernel_tests twins [ISA...] [--seed N]\n"
               "       qnnpy_kernel_tests run GRAPH INPUT OUTPUT PROFILE ISA [THREADS]\n"
               "       qnnpy_kernel_tests pool\n"
               "       qnnpy_kernel_tests peak [SECONDS]\n");
  return 2;
}

}  // namespace
}  // namespace qnnpy::kernel_tests

int main(int argc, char** argv) {
  using namespace qnnpy::kernel_tests;
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && args[0] == "info") return info();
    if (!args.empty() && args[0] == "twins") return twins({args.begin() + 1, args.end()});
    if (args.size() == 1 && args[0] == "pool") {
      const int failures = run_pool_checks();
      std::printf(failures ? "pool: %d FAILED\n" : "pool: all passed\n", failures);
      return failures ? 1 : 0;
    }
    if (!args.empty() && args.size() <= 2 && args[0] == "peak") return peak(args.size() == 2 ? std::atof(args[1].c_str()) : 0.5);
    if ((args.size() == 6 || args.size() == 7) && args[0] == "run") {
      const int threads = args.size() == 7 ? std::atoi(args[6].c_str()) : 1;
      run_graph_file(args[1], args[2], args[3], qnnpy::parse_profile(args[4]), qnnpy::parse_isa(args[5]), threads);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qnnpy_kernel_tests: %s\n", e.what());
    return 1;
  }
  return usage();
}
