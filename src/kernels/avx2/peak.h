// Microbenchmark of the exact int8 MAC ceiling of one core (vpmaddwd + vpaddd).
#pragma once

namespace qnnpy {

// GMAC/s of independent vpmaddwd/vpaddd chains over ~`seconds`; 0 without AVX2.
double peak_madd_gmacs(double seconds);

}  // namespace qnnpy
