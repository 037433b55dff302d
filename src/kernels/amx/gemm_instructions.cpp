// The amx GEMM on the AMX instructions (this file is built with -mamx-tile -mamx-int8): run only after
// kernels/dispatch.cpp found AMX-INT8, Linux granted the tile data and the GEMM passed its self-check.
#include "kernels/amx/amx_kernels.h"
#include "kernels/amx/gemm_driver.h"
#include "kernels/amx/tile_instructions.h"
#include "kernels/amx/tile_product.h"

namespace qnnpy {

using InstructionGemm = amx::GemmEntries<amx::InstructionTiles>;

void gemm_u8s8_amx(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                   int64_t ldc) {
  InstructionGemm::dense(a, m, kq, b_packed, n, c, ldc);
}

void gemm_u8s8_runs_amx(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc) {
  InstructionGemm::runs(a, m, b_packed, n, c, ldc);
}

void gemm_u8s8_runs_requantized_amx(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n,
                                    const RequantParams& p, RequantizeKernel requantize, uint8_t* out,
                                    int64_t ld_out) {
  InstructionGemm::runs_requantized(a, m, b_packed, n, p, requantize, out, ld_out);
}

void tile_dpbusd_amx(int rows, int k_quads, int cols, const uint8_t* a, const int8_t* b, int32_t* c) {
  amx::tile_product<amx::InstructionTiles>(rows, k_quads, cols, a, b, c);
}

}  // namespace qnnpy
