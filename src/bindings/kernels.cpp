#include "bindings/bindings.h"
#include "kernels/kernels.h"
#if defined(__x86_64__) && defined(QNNPY_AVX2_KERNELS)
#include "kernels/avx2/peak.h"
#endif

namespace qnnpy::bindings {

void bind_kernels(pybind11::module_& m) {
  namespace py = pybind11;
  m.def("cpu_has_avx2", &cpu_has_avx2, "Whether this CPU has AVX2 and FMA (false off x86-64).");
  m.def("cpu_has_neon_dot", &cpu_has_neon_dot,
        "Whether this CPU has the Arm dot-product extension (asimddp; false off AArch64).");
#if defined(__x86_64__) && defined(QNNPY_AVX2_KERNELS)
  // The peak loops are AVX2 code: x86-64 builds with the AVX2 kernels only.
  m.def("peak_madd_gmacs", &peak_madd_gmacs, py::arg("seconds") = 0.2,
        "Measured GMAC/s of a register-only vpmaddwd + vpaddd loop on one core: the int16 GEMM's ceiling.");
  m.def("peak_u8s8_gmacs", &peak_u8s8_gmacs, py::arg("seconds") = 0.2,
        "Measured GMAC/s of a register-only vpmaddubsw + vpmaddwd + vpaddd loop on one core: the u8s8 GEMM's ceiling.");
#endif
  m.def("default_isa", [] { return std::string(isa_name(default_isa())); },
        "The ISA the runtime uses by default (QNNPY_ISA=scalar|avx2|neon|neon_dot overrides).");
}

}  // namespace qnnpy::bindings
