// Microbenchmark of the vpdpbusd-on-ymm MAC ceiling of one core (the avxvnni set's GEMM), a
// register-only loop.
#pragma once

namespace qnnpy {

// GMAC/s of u8 x s8 MACs as gemm_u8s8_avxvnni does them (vpdpbusd on ymm, 32 per instruction, in
// the encoding the avxvnni set uses on this CPU): the fastest of many short blocks run for about
// `seconds`; 0 where the CPU has neither AVX-VNNI nor AVX-512 VNNI.
double peak_avxvnni_gmacs(double seconds);

}  // namespace qnnpy
