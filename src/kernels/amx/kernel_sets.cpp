// The amx kernel set and its software-model twin (kernels.h, Isa::Amx and Isa::AmxModel), and the
// amx set's check at first use.
#include "kernels/amx/amx_kernels.h"
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/scalar/scalar_kernels.h"
#include "kernels/self_check.h"

namespace qnnpy {

const KernelSet& amx_model_kernels() {
  static const KernelSet k = [] {
    KernelSet s = cpu_has_avx512_vnni() ? avx512_vnni_kernels() : cpu_has_avx2() ? avx2_kernels() : scalar_kernels();
    s.gemm_u8s8 = gemm_u8s8_amx_model;
    s.gemm_u8s8_runs = gemm_u8s8_runs_amx_model;
    s.gemm_u8s8_runs_requantized = gemm_u8s8_runs_requantized_amx_model;
    s.winograd_faster = false;  // the GEMM of the amx set it stands for does 5 times vpdpbusd's rate
    return s;
  }();
  return k;
}

// A k tail, a partial block of rows and an odd block of columns (m = 37, k = 100, n = 40), then whole
// k tiles (k = 128); then what the runtime runs for every conv with an 8-bit output: rows read in place
// (two runs of 64 bytes each, rows 192 bytes apart) and requantized after the tile stores.
bool amx_gemm_matches_scalar(const KernelSet& s) {
  return gemm_u8s8_matches_scalar(s.gemm_u8s8, 37, 100, 40) && gemm_u8s8_matches_scalar(s.gemm_u8s8, 37, 128, 40) &&
         gemm_u8s8_runs_requantized_matches_scalar(s.gemm_u8s8_runs_requantized, s.requantize, 37, 2, 64, 192, 40);
}

#if defined(QNNPY_AMX_KERNELS)
const KernelSet& amx_kernels() {
  static const KernelSet k = [] {
    KernelSet s = avx512_vnni_kernels();
    s.gemm_u8s8 = gemm_u8s8_amx;
    s.gemm_u8s8_runs = gemm_u8s8_runs_amx;
    s.gemm_u8s8_runs_requantized = gemm_u8s8_runs_requantized_amx;
    s.gemm_u8s8_few_rows = gemm_u8s8_avx512vnni;
    return s;
  }();
  return k;
}

bool amx_passes_self_check() {
  static const bool passes = amx_gemm_matches_scalar(amx_kernels());
  return passes;
}
#endif

}  // namespace qnnpy
