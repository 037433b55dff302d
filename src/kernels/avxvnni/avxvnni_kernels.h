// The avxvnni kernels (declarations); see kernels.h for the contracts. The avxvnni set is the
// AVX2 set with these swapped in: vpdpbusd on ymm is exact for any byte, so the u8 x s8 GEMM and
// the depthwise quads need no clamp of their input. Each is built in both encodings of the
// instruction (kernels/avxvnni/dpbusd.h).
#pragma once

#include "kernels/kernels.h"

namespace qnnpy {

// VEX: AVX-VNNI; EVEX: AVX-512 VL + VNNI (kernels/avxvnni/dpbusd.h).
enum class VnniEncoding { Vex, Evex };

template <VnniEncoding E>
void gemm_u8s8_avxvnni(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                       int64_t ldc);
template <VnniEncoding E>
void gemm_u8s8_runs_avxvnni(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c,
                            int64_t ldc);
template <VnniEncoding E>
void depthwise_quads_avxvnni(const uint8_t* z, const DepthwiseQuads& s, int rows, const int8_t* const* w,
                             int32_t* const* acc);

}  // namespace qnnpy
