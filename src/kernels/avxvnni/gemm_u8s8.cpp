// avxvnni GEMM, uint8 activations x int8 weights: the AVX2 u8 x s8 GEMM's tile (6 rows x 16
// columns, B packed by pack_b_u8s8) and walk (kernels/avx2/gemm_tile.h), with one vpdpbusd per
// row, B vector and k quad where AVX2 needs vpmaddubsw, vpmaddwd and vpaddd. vpdpbusd is exact
// for any byte, so A needs no clamp. Registers: 12 accumulators, two B vectors and the broadcast
// quad of A, 15 of the 16 ymm.
#include <immintrin.h>

#include "kernels/avx2/gemm_tile.h"
#include "kernels/avxvnni/avxvnni_kernels.h"
#include "kernels/avxvnni/dpbusd.h"

namespace qnnpy {
namespace {

// Rows ar[0..kGemmMR) of A times one block of B; row r's 16 results (kHalf: columns 0-7) at out[r].
template <VnniEncoding E, bool kHalf>
void full_tile(const uint8_t* const* ar, const U8RowRuns& a, const int8_t* bp, int32_t* const* out) {
  __m256i lo[kGemmMR], hi[kGemmMR];
#pragma GCC unroll 6
  for (int r = 0; r < kGemmMR; ++r) lo[r] = hi[r] = _mm256_setzero_si256();
  for (int64_t s = 0; s < a.runs; ++s) {
    const int64_t offset = s * a.run_stride;
    for (int64_t q = 0; q < a.run_len; q += 4, bp += 64) {
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp));
      const __m256i b1 = kHalf ? b0 : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp) + 1);
#pragma GCC unroll 6
      for (int r = 0; r < kGemmMR; ++r) {
        const __m256i av = broadcast_4_bytes(ar[r] + offset + q);
        lo[r] = dpbusd<E>(lo[r], av, b0);
        if (!kHalf) hi[r] = dpbusd<E>(hi[r], av, b1);
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kGemmMR; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[r]), lo[r]);
    if (!kHalf) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[r] + 8), hi[r]);
  }
}

// One row of A (a matrix-vector product): two accumulators, where the 6-row tile would compute the
// same row six times.
template <VnniEncoding E>
void one_row(const uint8_t* row, const U8RowRuns& a, const int8_t* bp, int32_t* c, int64_t cols) {
  __m256i lo = _mm256_setzero_si256(), hi = lo;
  for (int64_t s = 0; s < a.runs; ++s) {
    const uint8_t* p = row + s * a.run_stride;
    for (int64_t q = 0; q < a.run_len; q += 4, bp += 64) {
      const __m256i av = broadcast_4_bytes(p + q);
      lo = dpbusd<E>(lo, av, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp)));
      hi = dpbusd<E>(hi, av, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp) + 1));
    }
  }
  store_tile_row(c, lo, hi, cols);
}

template <VnniEncoding E, class RowAt>
void gemm(RowAt row, const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc) {
  gemm_u8s8_blocks(row, a, m, b_packed, n, c, ldc,
                   [&a](const uint8_t* const* ar, int rows, const int8_t* bp, int32_t* ct, int64_t ldct,
                        int64_t cols) {
                     if (rows == 1) return one_row<E>(ar[0], a, bp, ct, cols);
                     store_tile(rows, ct, ldct, cols, [&](int32_t* const* out, bool half) {
                       if (half) return full_tile<E, true>(ar, a, bp, out);
                       full_tile<E, false>(ar, a, bp, out);
                     });
                   });
}

}  // namespace

template <VnniEncoding E>
void gemm_u8s8_avxvnni(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                       int64_t ldc) {
  gemm<E>([a, kq](int64_t i) { return a + i * kq; }, U8RowRuns{nullptr, 1, kq, 0}, m, b_packed, n, c, ldc);
}

template <VnniEncoding E>
void gemm_u8s8_runs_avxvnni(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c,
                            int64_t ldc) {
  gemm<E>([&a](int64_t i) { return a.rows[i]; }, a, m, b_packed, n, c, ldc);
}

template void gemm_u8s8_avxvnni<VnniEncoding::Vex>(const uint8_t*, int64_t, int64_t, const int8_t*, int64_t,
                                                   int32_t*, int64_t);
template void gemm_u8s8_avxvnni<VnniEncoding::Evex>(const uint8_t*, int64_t, int64_t, const int8_t*, int64_t,
                                                    int32_t*, int64_t);
template void gemm_u8s8_runs_avxvnni<VnniEncoding::Vex>(const U8RowRuns&, int64_t, const int8_t*, int64_t, int32_t*,
                                                        int64_t);
template void gemm_u8s8_runs_avxvnni<VnniEncoding::Evex>(const U8RowRuns&, int64_t, const int8_t*, int64_t, int32_t*,
                                                         int64_t);

}  // namespace qnnpy
