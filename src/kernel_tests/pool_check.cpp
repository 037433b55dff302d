#include "kernel_tests/pool_check.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "runtime/parallel.h"

namespace qnnpy::kernel_tests {

int run_pool_checks() {
  using std::chrono::milliseconds;
  constexpr int kTrials = 10;
  int failures = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::atomic<int> calls[2] = {0, 0};
    std::atomic<bool> started{false};
    // Wakes the helpers once the helper has run its (short) body and blocked: it blocks after
    // spinning 0.5 ms (parallel.cpp), and the job stays open while body(0) sleeps.
    std::thread waker([&] {
      while (!started.load()) std::this_thread::yield();
      std::this_thread::sleep_for(milliseconds(5));
      wake_workers(2);
    });
    run_on_workers(2, [&](int worker) {
      ++calls[worker];
      if (worker != 0) return;
      started = true;
      std::this_thread::sleep_for(milliseconds(20));
    });
    waker.join();
    if (calls[0] != 1 || calls[1] > 1) {
      std::printf("pool trial %d: body(0) ran %d times, body(1) %d times (at most once each)\n", trial, calls[0].load(),
                  calls[1].load());
      ++failures;
    }
  }
  return failures;
}

}  // namespace qnnpy::kernel_tests
