// The peak microbenchmarks (register-only MAC loops, kernels/*/peak.cpp) this build has: the AVX2 and
// AVX-512 ones in x86-64 builds with the SIMD kernels, avxvnni and amx where their kernel sets are built.
#pragma once

#if defined(__x86_64__) && defined(QNNPY_AVX2_KERNELS)
#include "kernels/avx2/peak.h"
#include "kernels/avx512/peak.h"
#endif
#if defined(QNNPY_AVXVNNI_KERNELS)
#include "kernels/avxvnni/peak.h"
#endif
#if defined(QNNPY_AMX_KERNELS)
#include "kernels/amx/peak.h"
#endif
