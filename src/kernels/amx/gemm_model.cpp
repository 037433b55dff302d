// The amx GEMM on the software model of the tiles (plain C++): what the twin tests run on CPUs
// without AMX.
#include "kernels/amx/amx_kernels.h"
#include "kernels/amx/gemm_driver.h"
#include "kernels/amx/tile_model.h"
#include "kernels/amx/tile_product.h"

namespace qnnpy {

using ModelGemm = amx::GemmEntries<amx::ModelTiles>;

void gemm_u8s8_amx_model(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                         int64_t ldc) {
  ModelGemm::dense(a, m, kq, b_packed, n, c, ldc);
}

void gemm_u8s8_runs_amx_model(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c,
                              int64_t ldc) {
  ModelGemm::runs(a, m, b_packed, n, c, ldc);
}

void gemm_u8s8_runs_requantized_amx_model(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n,
                                          const RequantParams& p, RequantizeKernel requantize, uint8_t* out,
                                          int64_t ld_out) {
  ModelGemm::runs_requantized(a, m, b_packed, n, p, requantize, out, ld_out);
}

void tile_dpbusd_amx_model(int rows, int k_quads, int cols, const uint8_t* a, const int8_t* b, int32_t* c) {
  amx::tile_product<amx::ModelTiles>(rows, k_quads, cols, a, b, c);
}

}  // namespace qnnpy
