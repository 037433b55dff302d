// Microbenchmark of the tdpbusd MAC ceiling of one core, a register-only loop.
#pragma once

namespace qnnpy {

// GMAC/s of u8 x s8 MACs as the amx GEMM does them (tdpbusd on 16 x 64-byte tiles, 16,384 per
// instruction, four independent accumulator tiles): the fastest of many short blocks run for about
// `seconds`; 0 where the amx set cannot run (amx_unavailable_reason()) or is not built.
double peak_amx_gmacs(double seconds);

}  // namespace qnnpy
