#include "runtime/parallel.h"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace qnnpy {
namespace {

thread_local bool in_job = false;  // this thread is running a job's body

// Where a blocked helper wakes up. The scheduler may queue a thread woken from a busy CPU on
// that CPU (wake-affine placement), behind the caller that woke it, until load balancing moves
// it, often milliseconds later. On a 2-vCPU VM that made MobileNetV2 with 2 threads slower than
// with 1 after each pause (the helper joined 9% of the jobs instead of 35%; benchmarks/RESULTS.md).
// So the caller takes its own CPU out of a blocked helper's allowed CPUs before waking it, and
// the helper restores them once awake (Linux; elsewhere nothing is steered).
struct Helper {
#if defined(__linux__)
  pthread_t handle{};
  cpu_set_t allowed{};  // the helper's CPUs when it started
  bool blocked = false;  // waiting on the condition variable (guarded by the pool's mutex)
  bool steered = false;  // its CPUs were narrowed for this wake-up (guarded by the pool's mutex)

  void started() { pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed); }
  // Caller side, with the pool's mutex held: every allowed CPU but the caller's.
  void steer_away_from_caller() {
    if (!blocked) return;
    const int cpu = sched_getcpu();
    cpu_set_t others = allowed;
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) == 0) return;
    steered = pthread_setaffinity_np(handle, sizeof others, &others) == 0;
  }
  // Helper side, awake, with the pool's mutex held.
  void restore() {
    if (!steered) return;
    pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
    steered = false;
  }
#else
  bool blocked = false;
  void started() {}
  void steer_away_from_caller() {}
  void restore() {}
#endif
};

// Helper threads wait for a new job generation: first spinning (kHelperSpin), then
// blocked on a condition variable. A job's work is shared dynamically by its bodies, so
// a helper that wakes after the caller has finished the work is not needed and does not join.
class WorkerPool {
 public:
  void run(int workers, const std::function<void(int)>& body) {
    std::unique_lock<std::mutex> submit(submit_, std::defer_lock);
    if (in_job || !submit.try_lock()) {
      for (int w = 0; w < workers; ++w) body(w);
      return;
    }
    ensure_helpers(workers - 1);
    {
      std::lock_guard<std::mutex> lock(m_);
      body_ = &body;
      workers_ = workers;
      error_ = nullptr;
      const uint64_t job = generation_.load(std::memory_order_relaxed) + 1;
      state_.store(job << 32, std::memory_order_release);  // open, nobody joined
      generation_.store(job, std::memory_order_release);
      for (const auto& h : helpers_) h->steer_away_from_caller();
    }
    wake_.notify_all();
    std::exception_ptr error;
    in_job = true;
    try {
      body(0);
    } catch (...) {
      error = std::current_exception();
    }
    in_job = false;
    // Close the job: a helper not yet awake (descheduled on a busy machine, or still
    // leaving its condition variable) no longer joins, so the caller waits only for
    // the helpers that are running a body, never for one that has not started.
    state_.fetch_or(kClosed, std::memory_order_acq_rel);
    for (int spins = 0; (state_.load(std::memory_order_acquire) & kJoinedMask) != 0; ++spins) {
      if (spins > kSpins) std::this_thread::yield();
    }
    if (!error) {
      std::lock_guard<std::mutex> lock(m_);
      error = error_;
    }
    if (error) std::rethrow_exception(error);
  }

  void wake(int workers) {
    ensure_helpers(workers - 1);
    {
      std::lock_guard<std::mutex> lock(m_);
      bool any_blocked = false;
      for (const auto& h : helpers_) {
        any_blocked = any_blocked || h->blocked;
        h->steer_away_from_caller();
      }
      if (!any_blocked) return;
      pokes_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
  }

 private:
  static constexpr int kSpins = 20000;  // the caller's wait for running helpers, before it yields
  // How long a helper spins for the next job before it blocks. The jobs of one forward pass follow
  // one another within this even with a chain of one-thread nodes between them, and waking a blocked
  // helper costs tens of microseconds per job on a virtual machine whose idle vCPU the host has put to
  // sleep: after an idle gap of 20 ms, MobileNetV2 with 2 threads ran slower than with 1 when helpers
  // blocked after 20000 spins (about 50 us), and about 1.45x faster with 500 us (1 ms: alike; 2 ms: less,
  // benchmarks/RESULTS.md). A helper so burns up to 0.5 ms of CPU time after a model's last parallel node.
  static constexpr std::chrono::microseconds kHelperSpin{500};
  // state_: the job's number (low 32 bits) in bits 32-63, kClosed once the caller's body
  // has returned, and in the low bits the number of helpers running the job's body.
  static constexpr uint64_t kClosed = uint64_t{1} << 31;
  static constexpr uint64_t kJoinedMask = kClosed - 1;

  void ensure_helpers(int helpers) {
    std::lock_guard<std::mutex> lock(m_);
    while (static_cast<int>(helpers_.size()) < helpers) {
      auto helper = std::make_unique<Helper>();
      std::thread t(&WorkerPool::loop, this, helper.get(), static_cast<int>(helpers_.size()) + 1, generation_.load());
#if defined(__linux__)
      helper->handle = t.native_handle();
#endif
      t.detach();
      helpers_.push_back(std::move(helper));
    }
  }

  void loop(Helper* self, int id, uint64_t seen) {
    in_job = true;  // a helper only ever runs job bodies
    self->started();
    for (;;) {
      uint64_t g = generation_.load(std::memory_order_acquire);
      const auto spin_until = std::chrono::steady_clock::now() + kHelperSpin;
      for (int spins = 1; g == seen; ++spins) {
        if (spins % 256 == 0 && std::chrono::steady_clock::now() > spin_until) break;
        g = generation_.load(std::memory_order_acquire);
      }
      const std::function<void(int)>* body;
      int workers;
      const uint64_t previous = seen;
      {
        // The job's fields are read together with its generation under the lock they
        // are written under, so a slow helper never pairs one job's number with another's body.
        std::unique_lock<std::mutex> lock(m_);
        if (g == seen) {
          self->blocked = true;
          const uint64_t pokes = pokes_.load(std::memory_order_acquire);
          // A poke (wake()) wakes it to spin for the jobs to come: with the generation unchanged it
          // joins nothing below.
          wake_.wait(lock, [&] {
            return generation_.load(std::memory_order_acquire) != seen || pokes_.load(std::memory_order_acquire) != pokes;
          });
          self->blocked = false;
          self->restore();
        }
        seen = generation_.load(std::memory_order_acquire);
        body = body_;
        workers = workers_;
      }
      // Only a job newer than the last one seen: woken by a poke while that job is still open, a
      // helper that has already run its body there (or found it closed) must not join it again.
      if (seen != previous && id < workers && join(seen)) {
        try {
          (*body)(id);
        } catch (...) {
          std::lock_guard<std::mutex> lock(m_);
          if (!error_) error_ = std::current_exception();
        }
        state_.fetch_sub(1, std::memory_order_acq_rel);
      }
    }
  }

  // Counts this helper in job `job` if that job is still the current one and open.
  bool join(uint64_t job) {
    uint64_t s = state_.load(std::memory_order_acquire);
    while ((s >> 32) == (job & 0xFFFFFFFFu) && !(s & kClosed)) {
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
    }
    return false;
  }

  std::mutex submit_;  // one job at a time
  std::mutex m_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> pokes_{0};  // wake() calls that found a helper blocked
  std::atomic<uint64_t> state_{0};
  const std::function<void(int)>* body_ = nullptr;
  std::exception_ptr error_;  // the first exception of a helper's body in the current job
  int workers_ = 0;
  std::vector<std::unique_ptr<Helper>> helpers_;  // guarded by m_ (the helpers themselves live forever)
};

// The process's pool, never destroyed (its threads outlive static destruction). A child made by fork()
// gets a new one: the parent's helpers do not exist there, and the inherited condition variable still
// counts them as waiters, so a broadcast on it would wait for them forever.
std::atomic<WorkerPool*> the_pool{nullptr};

void forget_pool_after_fork() { the_pool.store(nullptr); }

WorkerPool& pool() {
  static const int registered = pthread_atfork(nullptr, nullptr, forget_pool_after_fork);
  (void)registered;
  WorkerPool* p = the_pool.load(std::memory_order_acquire);
  if (p == nullptr) {
    auto* fresh = new WorkerPool();
    if (the_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
    delete fresh;  // another thread made it first
  }
  return *p;
}

}  // namespace

void wake_workers(int workers) {
  if (workers > 1) pool().wake(workers);
}

void run_on_workers(int workers, const std::function<void(int)>& body) {
  if (workers <= 1) {
    if (workers == 1) body(0);
    return;
  }
  pool().run(workers, body);
}

}  // namespace qnnpy
