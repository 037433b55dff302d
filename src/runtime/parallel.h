// A minimal parallel-for over chunk indices with std::thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace qnnpy {

// Calls fn(chunk, worker) for chunk in [0, chunks) on up to `threads` workers.
template <class Fn>
void parallel_chunks(int64_t chunks, int threads, Fn fn) {
  if (threads <= 1 || chunks <= 1) {
    for (int64_t c = 0; c < chunks; ++c) fn(c, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  auto work = [&](int worker) {
    for (int64_t c = next++; c < chunks; c = next++) fn(c, worker);
  };
  std::vector<std::thread> pool;
  const int workers = static_cast<int>(std::min<int64_t>(threads, chunks));
  for (int w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
}

}  // namespace qnnpy
