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

#if defined(QNNPY_AMX_KERNELS)
const KernelSet& amx_kernels() {
  static const KernelSet k = [] {
    KernelSet s = avx512_vnni_kernels();
    s.gemm_u8s8 = gemm_u8s8_amx;
    s.gemm_u8s8_runs = gemm_u8s8_runs_amx;
    s.gemm_u8s8_runs_requantized = gemm_u8s8_runs_requantized_amx;
    return s;
  }();
  return k;
}

// A k tail, a partial block of rows and an odd block of columns (m = 37, k = 100, n = 40), then whole
// k tiles read in place (k = 128).
bool amx_passes_self_check() {
  static const bool passes =
      gemm_u8s8_matches_scalar(gemm_u8s8_amx, 37, 100, 40) && gemm_u8s8_matches_scalar(gemm_u8s8_amx, 37, 128, 40);
  return passes;
}
#endif

}  // namespace qnnpy
