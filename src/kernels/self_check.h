// The first-use check of the kernel sets whose code the project's test machines cannot run
// (avxvnni's VEX encoding, amx): run on the machine that runs them, once, before they are used.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace qnnpy {

// Whether `gemm` (a KernelSet::gemm_u8s8) equals the scalar u8 x s8 GEMM on an m x k x n problem with
// every byte value and weights from -128 to 127.
bool gemm_u8s8_matches_scalar(void (*gemm)(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n,
                                           int32_t* c, int64_t ldc),
                              int64_t m, int64_t k, int64_t n);

// Whether `gemm` (a KernelSet::gemm_u8s8_runs_requantized, with `requantize` its set's requantize) equals
// the scalar gemm_u8s8_runs then requantize on m rows `spacing` bytes apart in one buffer (a conv's output
// pixels along a row), each of `runs` runs of run_len bytes, into n columns, with per-column scales.
bool gemm_u8s8_runs_requantized_matches_scalar(decltype(KernelSet::gemm_u8s8_runs_requantized) gemm,
                                               RequantizeKernel requantize, int64_t m, int64_t runs, int64_t run_len,
                                               int64_t spacing, int64_t n);

}  // namespace qnnpy
