#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings/bindings.h"
#include "kernels/kernels.h"
#include "kernels/peaks.h"

namespace qnnpy::bindings {

void bind_kernels(pybind11::module_& m) {
  namespace py = pybind11;
  m.def("cpu_has_avx2", &cpu_has_avx2, "Whether this CPU has AVX2 and FMA (false off x86-64).");
  m.def("cpu_has_avx512_vnni", &cpu_has_avx512_vnni,
        "Whether this CPU has AVX-512 F/BW/VL with VNNI and the OS saves the zmm state (false off x86-64).");
  m.def("cpu_has_avx_vnni", &cpu_has_avx_vnni,
        "Whether this CPU has AVX-VNNI (vpdpbusd on ymm, VEX-encoded) with AVX2 and the ymm state (false off x86-64).");
  m.def("cpu_has_amx", &cpu_has_amx,
        "Whether the amx kernel set runs here: AMX-TILE and AMX-INT8, AVX-512 VNNI, the tile state enabled by the OS "
        "and granted to this process by Linux (false off x86-64 and in builds without the amx kernels).");
  m.def("amx_unavailable_reason", &amx_unavailable_reason,
        "Why the amx kernel set cannot run here, or '' where it can.");
  m.def("cpu_has_neon_dot", &cpu_has_neon_dot,
        "Whether this CPU has the Arm dot-product extension (asimddp; false off AArch64).");
#if defined(__x86_64__) && defined(QNNPY_AVX2_KERNELS)
  // The peak loops are x86 SIMD code: x86-64 builds with the SIMD kernels only.
  m.def("peak_madd_gmacs", &peak_madd_gmacs, py::arg("seconds") = 0.2,
        "Measured GMAC/s of a register-only vpmaddwd + vpaddd loop on one core: the int16 GEMM's ceiling.");
  m.def("peak_u8s8_gmacs", &peak_u8s8_gmacs, py::arg("seconds") = 0.2,
        "Measured GMAC/s of a register-only vpmaddubsw + vpmaddwd + vpaddd loop on one core: the u8s8 GEMM's ceiling.");
  m.def("peak_vnni_gmacs", &peak_vnni_gmacs, py::arg("seconds") = 0.2,
        "Measured GMAC/s of a register-only vpdpbusd (zmm) loop on one core: the AVX-512 VNNI u8s8 GEMM's ceiling "
        "(0 without AVX-512 VNNI).");
  m.def(
      "peak_avxvnni_gmacs",
      [](double seconds) {
#if defined(QNNPY_AVXVNNI_KERNELS)
        return peak_avxvnni_gmacs(seconds);
#else
        (void)seconds;
        return 0.0;
#endif
      },
      py::arg("seconds") = 0.2,
      "Measured GMAC/s of a register-only vpdpbusd (ymm) loop on one core: the avxvnni u8s8 GEMM's ceiling, in the "
      "encoding that set uses here (AVX-VNNI's, else AVX-512 VNNI's; 0 with neither, or in a build without it).");
  m.def(
      "peak_amx_gmacs",
      [](double seconds) {
#if defined(QNNPY_AMX_KERNELS)
        return peak_amx_gmacs(seconds);
#else
        (void)seconds;
        return 0.0;
#endif
      },
      py::arg("seconds") = 0.2,
      "Measured GMAC/s of a register-only tdpbusd loop (four independent 16 x 16 int32 tiles) on one core: the amx "
      "u8s8 GEMM's ceiling (0 where the amx set cannot run, or in a build without it).");
#endif
#if defined(QNNPY_AMX_KERNELS)
  m.attr("amx_kernels_built") = true;
#else
  m.attr("amx_kernels_built") = false;
#endif
#if defined(QNNPY_AVXVNNI_KERNELS)
  m.attr("avxvnni_kernels_built") = true;
#else
  m.attr("avxvnni_kernels_built") = false;
#endif
  m.def(
      "runnable_simd_isas",
      [] {
        std::vector<std::string> names;
        for (Isa isa : runnable_simd_isas()) names.emplace_back(isa_name(isa));
        return names;
      },
      "The SIMD kernel sets of this build that this CPU runs, by name (e.g. ['avx2', 'avxvnni', 'avx512vnni', "
      "'amx']).");
  m.def("default_isa", [] { return std::string(isa_name(default_isa())); },
        "The ISA the runtime uses by default (QNNPY_ISA=scalar|avx2|avxvnni|avx512vnni|amx|amx_model|neon|neon_dot "
        "overrides).");
}

}  // namespace qnnpy::bindings
