// The timing of the peak microbenchmarks (kernels/*/peak.cpp): the GMAC/s of the fastest of many
// short blocks of a register-only loop, run for about `seconds`. On a shared machine, blocks during
// which the thread was descheduled are slower and do not count.
#pragma once

#include <algorithm>
#include <chrono>

namespace qnnpy {

// loop(n) runs n iterations of macs_per_iteration multiply-adds each.
inline double fastest_block_gmacs(void (*loop)(long), double macs_per_iteration, double seconds) {
  constexpr long kBlock = 20000;
  const auto start = std::chrono::steady_clock::now();
  double best = 0.0;
  for (auto t0 = start; std::chrono::duration<double>(t0 - start).count() < seconds;) {
    loop(kBlock);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::max(best, kBlock * macs_per_iteration / std::chrono::duration<double>(t1 - t0).count() / 1e9);
    t0 = t1;
  }
  return best;
}

}  // namespace qnnpy
