// Microbenchmarks of the MAC ceilings of one core, register-only loops.
#pragma once

namespace qnnpy {

// Each is the rate of the fastest of many short blocks run for ~`seconds` (blocks during
// which a busy machine descheduled the thread do not count).
// GMAC/s of exact int16 MACs (vpmaddwd + vpaddd, 16 per step) over ~`seconds`; 0 without AVX2.
double peak_madd_gmacs(double seconds);
// GMAC/s of u8 x s8 MACs as gemm_u8s8 does them (vpmaddubsw + vpmaddwd with ones +
// vpaddd, 32 per step) over ~`seconds`; 0 without AVX2.
double peak_u8s8_gmacs(double seconds);

}  // namespace qnnpy
