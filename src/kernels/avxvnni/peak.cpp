// The loop is written in assembly, so that the compiler cannot move work out of it, and in both
// encodings of vpdpbusd (kernels/avxvnni/dpbusd.h).
#include "kernels/avxvnni/peak.h"

#include "kernels/kernels.h"
#include "kernels/peak_rate.h"

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
  if (cpu_has_avx_vnni()) return fastest_block_gmacs(vex_loop, 12 * 32, seconds);
  return cpu_has_avx512_vnni() ? fastest_block_gmacs(evex_loop, 12 * 32, seconds) : 0.0;
}

}  // namespace qnnpy
