// vpdpbusd on ymm in either of its two encodings, for the avxvnni kernel set. The VEX form is
// AVX-VNNI (Intel Alder Lake and later cores, AMD Zen 5); the EVEX form is AVX-512 VL + VNNI,
// which Intel Ice Lake and AMD Zen 4 have without AVX-VNNI. Both multiply the four
// u8 x s8 byte pairs of each 32-bit lane and add their sum to the lane, exactly (no saturation).
// Written as inline assembly so that one translation unit, compiled for AVX2 only, holds both
// encodings (%{ %} escape the braces of the pseudo-prefixes, which GCC's templates reserve for
// dialect alternatives); kernels/dispatch.cpp picks the one the CPU runs.
#pragma once

#include <immintrin.h>

#include "kernels/avxvnni/avxvnni_kernels.h"

namespace qnnpy {

// acc + the sums of the u8 x s8 products of each lane's four bytes of u and s.
template <VnniEncoding E>
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
  if constexpr (E == VnniEncoding::Vex) {
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
  } else {
    __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
  }
  return acc;
}

}  // namespace qnnpy
