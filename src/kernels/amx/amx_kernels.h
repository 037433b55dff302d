// The amx kernels (declarations): the u8 x s8 GEMM of kernels/amx/gemm_driver.h on the AMX
// instructions (built where the compiler and assembler know AMX: QNNPY_AMX_KERNELS) and on the
// software model of the tiles (every x86-64 build). See kernels.h for the contracts of the three
// GEMM entries; all are exact for any uint8 A.
#pragma once

#include "kernels/kernels.h"

namespace qnnpy {

// The avx512vnni set with the u8 x s8 GEMM on AMX tiles; depthwise and element-wise kernels stay on
// AVX-512 (dispatch.cpp admits it only where amx_unavailable_reason() is "", AVX-512 VNNI included).
const KernelSet& amx_kernels();
// Whether the amx GEMM equals the scalar one on small problems (kernels/self_check.h): run once, at
// the set's first use, on the CPU that runs it.
bool amx_passes_self_check();
// The problems of that check, on the GEMM entries of any set `s` (the twin tests run them on amx_model).
bool amx_gemm_matches_scalar(const KernelSet& s);

void gemm_u8s8_amx(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                   int64_t ldc);
void gemm_u8s8_runs_amx(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc);
void gemm_u8s8_runs_requantized_amx(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n,
                                    const RequantParams& p, RequantizeKernel requantize, uint8_t* out, int64_t ld_out);

void gemm_u8s8_amx_model(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                         int64_t ldc);
void gemm_u8s8_runs_amx_model(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c,
                              int64_t ldc);
void gemm_u8s8_runs_requantized_amx_model(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n,
                                          const RequantParams& p, RequantizeKernel requantize, uint8_t* out,
                                          int64_t ld_out);

// One tdpbusd on tiles of any legal shape, for the tests of the tile semantics themselves:
// C (rows x cols int32, row-major) += A (rows x 4 k_quads bytes, row-major) times B (k_quads rows of
// cols quads, VNNI order: B[q][4 j + h] multiplies A[.][4 q + h] into column j), through
// configure, load, tdpbusd, store and release; rows, k_quads, cols in [1, 16].
void tile_dpbusd_amx(int rows, int k_quads, int cols, const uint8_t* a, const int8_t* b, int32_t* c);
void tile_dpbusd_amx_model(int rows, int k_quads, int cols, const uint8_t* a, const int8_t* b, int32_t* c);

}  // namespace qnnpy
