// The first-use check of the kernel sets whose code the project's test machines cannot run
// (avxvnni's VEX encoding, amx): run on the machine that runs them, once, before they are used.
#pragma once

#include <cstdint>

namespace qnnpy {

// Whether `gemm` (a KernelSet::gemm_u8s8) equals the scalar u8 x s8 GEMM on an m x k x n problem with
// every byte value and weights from -128 to 127.
bool gemm_u8s8_matches_scalar(void (*gemm)(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n,
                                           int32_t* c, int64_t ldc),
                              int64_t m, int64_t k, int64_t n);

}  // namespace qnnpy
