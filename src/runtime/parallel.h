// A parallel-for over chunk indices on a persistent pool of worker threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace qnnpy {

// Runs body(0) on the calling thread and body(worker), worker in [1, workers), on pool
// threads created on first use and kept for the process, concurrently; each body at most
// once per call (even when wake_workers runs meanwhile on another thread). A pool thread
// runs its body only if it starts before body(0) returns (the caller never waits for
// a thread that is not yet awake), so the bodies must share the work dynamically, as
// parallel_chunks does. One job at a time: a caller that finds the pool busy (another
// thread's job) and a nested call from inside a body run every worker's body
// themselves, in order. An exception from a body is rethrown to the caller once every
// running body has finished.
void run_on_workers(int workers, const std::function<void(int)>& body);

// Wakes the pool's blocked helpers (creating up to workers - 1 of them) without a job, so that
// they are spinning, awake, when the jobs of a forward pass come: a blocked helper takes tens of
// microseconds or more to wake, and a job that finds it asleep runs without it.
void wake_workers(int workers);

// How many of `threads` workers a job of `work` units should use: one per `min_work_per_worker`
// units, at least one. A worker costs the job a wake-up and the transfer of its inputs
// between cores, and on a busy machine it may be preempted while holding a chunk, which
// the job then waits for: a job too small to repay that runs on the calling thread alone.
inline int workers_for(int64_t work, int64_t min_work_per_worker, int threads) {
  const int64_t useful = work / min_work_per_worker;
  return static_cast<int>(useful < 1 ? 1 : (useful < threads ? useful : threads));
}

// Calls fn(chunk, worker) for chunk in [0, chunks) on up to `threads` workers; chunks
// are handed out one at a time, so uneven chunks balance.
template <class Fn>
void parallel_chunks(int64_t chunks, int threads, Fn fn) {
  if (threads <= 1 || chunks <= 1) {
    for (int64_t c = 0; c < chunks; ++c) fn(c, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  const int workers = static_cast<int>(chunks < threads ? chunks : threads);
  run_on_workers(workers, [&](int worker) {
    for (int64_t c = next++; c < chunks; c = next++) fn(c, worker);
  });
}

// Calls fn(begin, end) for consecutive slices of [0, count) that together cover it, on one worker
// per `min_per_worker` units (at most `threads`, as workers_for). The slices' bounds but the last
// are multiples of `align` (element-wise kernels: 64, so that they meet whole vectors).
template <class Fn>
void parallel_slices(int64_t count, int64_t min_per_worker, int64_t align, int threads, Fn fn) {
  const int workers = workers_for(count, min_per_worker, threads);
  if (workers == 1) return fn(int64_t{0}, count);
  // A few slices per worker, so that a worker that starts late still gets its part.
  const int64_t slices = 4 * workers;
  auto bound = [&](int64_t i) { return i == slices ? count : count * i / slices / align * align; };
  parallel_chunks(slices, workers, [&](int64_t i, int) {
    const int64_t begin = bound(i), end = bound(i + 1);
    if (begin < end) fn(begin, end);
  });
}

}  // namespace qnnpy
