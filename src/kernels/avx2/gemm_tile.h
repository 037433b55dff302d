// Pieces shared by the AVX2 GEMM tiles (gemm.cpp: int16 x int16, gemm_u8s8.cpp: uint8 x int8):
// 6 rows x kGemmNR columns of int32 accumulators.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kernels.h"

namespace qnnpy {

constexpr int kGemmMR = 6;

// The 4 bytes at p (a pair of int16 or a quad of uint8) in every 32-bit lane.
inline __m256i broadcast_4_bytes(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// Stores one accumulator row (lo: columns 0-7, hi: 8-15); `cols` < kGemmNR stores a partial row.
inline void store_tile_row(int32_t* c, __m256i lo, __m256i hi, int64_t cols) {
  if (cols == kGemmNR) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + 8), hi);
    return;
  }
  alignas(32) int32_t tmp[kGemmNR];
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), lo);
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + 8), hi);
  std::memcpy(c, tmp, cols * sizeof(int32_t));
}

}  // namespace qnnpy
