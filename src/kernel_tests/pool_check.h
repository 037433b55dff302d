// Checks of the worker pool (runtime/parallel.h) that need threads of their own.
#pragma once

namespace qnnpy::kernel_tests {

// Each body of a job runs at most once even when another thread wakes the pool's blocked helpers
// while the job is still open; returns the number of failed trials (each is printed).
int run_pool_checks();

}  // namespace qnnpy::kernel_tests
