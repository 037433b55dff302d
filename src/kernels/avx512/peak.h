// Microbenchmark of the vpdpbusd MAC ceiling of one core, a register-only loop.
#pragma once

namespace qnnpy {

// GMAC/s of u8 x s8 MACs as gemm_u8s8_avx512vnni does them (vpdpbusd on zmm, 64 per
// instruction): the fastest of many short blocks run for ~`seconds`; 0 without AVX-512 VNNI.
double peak_vnni_gmacs(double seconds);

}  // namespace qnnpy
