#include "kernels/avx2/peak.h"

#include <immintrin.h>

#include <chrono>

#include "kernels/kernels.h"

namespace qnnpy {

double peak_madd_gmacs(double seconds) {
  if (!cpu_has_avx2()) return 0.0;
  // 12 independent accumulators hide the multiply latency; each vpmaddwd is 16 MACs.
  __m256i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i a = _mm256_set1_epi16(3), b = _mm256_set1_epi16(-2);
  int64_t iterations = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds) {
    for (int rep = 0; rep < 100000; ++rep) {
      for (int i = 0; i < 12; ++i) acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(a, b));
      __asm__ volatile("" : "+x"(acc[0]), "+x"(acc[1]), "+x"(acc[2]), "+x"(acc[3]), "+x"(acc[4]), "+x"(acc[5]));
      __asm__ volatile("" : "+x"(acc[6]), "+x"(acc[7]), "+x"(acc[8]), "+x"(acc[9]), "+x"(acc[10]), "+x"(acc[11]));
    }
    iterations += 100000;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return static_cast<double>(iterations) * 12 * 16 / elapsed / 1e9;
}

}  // namespace qnnpy
