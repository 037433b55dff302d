// The loop is written in assembly: with intrinsics, the compiler could move the
// loop-invariant work out and the loop would not measure vpdpbusd.
#include "kernels/avx512/peak.h"

#include "kernels/kernels.h"
#include "kernels/peak_rate.h"

namespace qnnpy {
namespace {

// 24 independent accumulators (zmm8..zmm31), as many as the GEMM tile has, hide the latency.
#define QNNPY_REPEAT24(X)                                                                                      \
  X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) \
      X(26) X(27) X(28) X(29) X(30) X(31)
#define QNNPY_VNNI_STEP(i) "vpdpbusd %%zmm1, %%zmm0, %%zmm" #i "\n\t"

void vnni_loop(long n) {
  __asm__ volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\tvpxord %%zmm1, %%zmm1, %%zmm1\n\t"
      "1:\n\t" QNNPY_REPEAT24(QNNPY_VNNI_STEP) "dec %0\n\tjnz 1b\n\tvzeroupper"
      : "+r"(n)
      :
      : "cc", "xmm0", "xmm1", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17",
        "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29",
        "xmm30", "xmm31");
}

}  // namespace

double peak_vnni_gmacs(double seconds) {
  return cpu_has_avx512_vnni() ? fastest_block_gmacs(vnni_loop, 24 * 64, seconds) : 0.0;
}

}  // namespace qnnpy
