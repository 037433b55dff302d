// The loop is written in assembly, so that the compiler cannot move work out of it, and in both
// encodings of vpdpbusd (kernels/avxvnni/dpbusd.h).
#include "kernels/avxvnni/peak.h"

#include <algorithm>
#include <chrono>

#include "kernels/kernels.h"

namespace qnnpy {
namespace {

// 12 independent accumulators (ymm4..ymm15), as many as the GEMM tile has, hide the latency.
#define QNNPY_REPEAT12(X) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define QNNPY_VEX_STEP(i) "%{vex%} vpdpbusd %%ymm1, %%ymm0, %%ymm" #i "\n\t"
#define QNNPY_EVEX_STEP(i) "%{evex%} vpdpbusd %%ymm1, %%ymm0, %%ymm" #i "\n\t"
#define QNNPY_YMM_CLOBBERS                                                                                  \
  "cc", "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", \
      "xmm14", "xmm15"

void vex_loop(long n) {
  __asm__ volatile("vpxor %%xmm0, %%xmm0, %%xmm0\n\tvpxor %%xmm1, %%xmm1, %%xmm1\n\t"
                   "1:\n\t" QNNPY_REPEAT12(QNNPY_VEX_STEP) "dec %0\n\tjnz 1b\n\tvzeroupper"
                   : "+r"(n)
                   :
                   : QNNPY_YMM_CLOBBERS);
}

void evex_loop(long n) {
  __asm__ volatile("vpxor %%xmm0, %%xmm0, %%xmm0\n\tvpxor %%xmm1, %%xmm1, %%xmm1\n\t"
                   "1:\n\t" QNNPY_REPEAT12(QNNPY_EVEX_STEP) "dec %0\n\tjnz 1b\n\tvzeroupper"
                   : "+r"(n)
                   :
                   : QNNPY_YMM_CLOBBERS);
}

}  // namespace

double peak_avxvnni_gmacs(double seconds) {
  const bool vex = cpu_has_avx_vnni();
  if (!vex && !cpu_has_avx512_vnni()) return 0.0;
  constexpr long kBlock = 20000;
  constexpr double kMacsPerIteration = 12 * 32;
  // The fastest of many short blocks: on a shared machine, blocks during which the
  // thread was descheduled are slower and do not count.
  const auto start = std::chrono::steady_clock::now();
  double best = 0.0;
  for (auto t0 = start; std::chrono::duration<double>(t0 - start).count() < seconds;) {
    if (vex) {
      vex_loop(kBlock);
    } else {
      evex_loop(kBlock);
    }
    const auto t1 = std::chrono::steady_clock::now();
    best = std::max(best, kBlock * kMacsPerIteration / std::chrono::duration<double>(t1 - t0).count() / 1e9);
    t0 = t1;
  }
  return best;
}

}  // namespace qnnpy
