// The loops are written in assembly: with intrinsics, the compiler hoists the
// loop-invariant multiplies and the loop measures additions only.
#include "kernels/avx2/peak.h"

#include "kernels/kernels.h"
#include "kernels/peak_rate.h"

namespace qnnpy {
namespace {

// 12 independent accumulators (ymm4..ymm15) hide the multiply latency.
#define QNNPY_REPEAT12(X) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define QNNPY_S16_STEP(i) "vpmaddwd %%ymm1, %%ymm0, %%ymm3\n\tvpaddd %%ymm3, %%ymm" #i ", %%ymm" #i "\n\t"
#define QNNPY_U8S8_STEP(i) \
  "vpmaddubsw %%ymm1, %%ymm0, %%ymm3\n\tvpmaddwd %%ymm2, %%ymm3, %%ymm3\n\tvpaddd %%ymm3, %%ymm" #i ", %%ymm" #i "\n\t"
#define QNNPY_LOOP(step)                                                                                     \
  __asm__ volatile(                                                                                          \
      "vpxor %%ymm0, %%ymm0, %%ymm0\n\tvpxor %%ymm1, %%ymm1, %%ymm1\n\tvpxor %%ymm2, %%ymm2, %%ymm2\n\t"        \
      "1:\n\t" QNNPY_REPEAT12(step) "dec %0\n\tjnz 1b\n\tvzeroupper"                                         \
      : "+r"(n)                                                                                              \
      :                                                                                                      \
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", \
        "xmm12", "xmm13", "xmm14", "xmm15")

void s16_loop(long n) { QNNPY_LOOP(QNNPY_S16_STEP); }
void u8s8_loop(long n) { QNNPY_LOOP(QNNPY_U8S8_STEP); }

}  // namespace

double peak_madd_gmacs(double seconds) {
  return cpu_has_avx2() ? fastest_block_gmacs(s16_loop, 12 * 16, seconds) : 0.0;
}

double peak_u8s8_gmacs(double seconds) {
  return cpu_has_avx2() ? fastest_block_gmacs(u8s8_loop, 12 * 32, seconds) : 0.0;
}

}  // namespace qnnpy
