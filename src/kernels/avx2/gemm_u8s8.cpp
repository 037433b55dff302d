// AVX2 GEMM, uint8 activations x int8 weights: vpmaddubsw forms int16 sums of two
// products, vpmaddwd with ones widens adjacent pairs into int32 (so each int32 lane
// takes 4 products per step), vpaddd accumulates. vpmaddubsw saturates its pair
// sums: the caller guarantees they fit in int16 (see runtime/u8s8_input.h), which makes
// the whole pipeline exact. Register tile: 6 rows x 16 columns; A dense (gemm_u8s8) or read
// in place in runs (gemm_u8s8_runs, kernels.h U8RowRuns). Also the byte clamp
// that prepares its input (runtime/u8s8_input.h).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/gemm_tile.h"
#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {
namespace {

// One row of a k step: broadcast row r's quad, vpmaddubsw with B (columns 0-7 in ymm1; for
// columns 8-15 read from memory), vpmaddwd with the ones in ymm0, added to the row's accumulators.
#define QNNPY_U8S8_ROW_LO(r, lo)                   \
  "mov 8*" #r "(%[ar]), %[p]\n\t"                  \
  "vpbroadcastd (%[p],%[q]), %%ymm2\n\t"           \
  "vpmaddubsw %%ymm1, %%ymm2, %%ymm3\n\t"          \
  "vpmaddwd %%ymm0, %%ymm3, %%ymm3\n\t"            \
  "vpaddd %%ymm3, %%ymm" #lo ", %%ymm" #lo "\n\t"
#define QNNPY_U8S8_ROW_HI(hi)                      \
  "vpmaddubsw 32(%[bp]), %%ymm2, %%ymm3\n\t"       \
  "vpmaddwd %%ymm0, %%ymm3, %%ymm3\n\t"            \
  "vpaddd %%ymm3, %%ymm" #hi ", %%ymm" #hi "\n\t"
#define QNNPY_U8S8_ROW(r, lo, hi) QNNPY_U8S8_ROW_LO(r, lo) QNNPY_U8S8_ROW_HI(hi)

#define QNNPY_U8S8_STORE_LO(r, lo)          \
  "mov 8*" #r "(%[out]), %[p]\n\t"          \
  "vmovdqu %%ymm" #lo ", (%[p])\n\t"
#define QNNPY_U8S8_STORE(r, lo, hi) QNNPY_U8S8_STORE_LO(r, lo) "vmovdqu %%ymm" #hi ", 32(%[p])\n\t"

// Zeroes the accumulators, sets the ones and opens the loops over runs (q walks [off, off +
// run_len)) and k steps.
#define QNNPY_U8S8_HEAD                                                                           \
  "vpxor %%xmm4, %%xmm4, %%xmm4\n\t"                                                              \
  "vpxor %%xmm5, %%xmm5, %%xmm5\n\t"                                                              \
  "vpxor %%xmm6, %%xmm6, %%xmm6\n\t"                                                              \
  "vpxor %%xmm7, %%xmm7, %%xmm7\n\t"                                                              \
  "vpxor %%xmm8, %%xmm8, %%xmm8\n\t"                                                              \
  "vpxor %%xmm9, %%xmm9, %%xmm9\n\t"                                                              \
  "vpxor %%xmm10, %%xmm10, %%xmm10\n\t"                                                           \
  "vpxor %%xmm11, %%xmm11, %%xmm11\n\t"                                                           \
  "vpxor %%xmm12, %%xmm12, %%xmm12\n\t"                                                           \
  "vpxor %%xmm13, %%xmm13, %%xmm13\n\t"                                                           \
  "vpxor %%xmm14, %%xmm14, %%xmm14\n\t"                                                           \
  "vpxor %%xmm15, %%xmm15, %%xmm15\n\t"                                                           \
  "vpcmpeqw %%ymm0, %%ymm0, %%ymm0\n\t"                                                           \
  "vpsrlw $15, %%ymm0, %%ymm0\n\t"                                                                \
  "1:\n\t"                                                                                        \
  "mov %[off], %[q]\n\t"                                                                          \
  "lea (%[off],%[len]), %[end]\n\t"                                                               \
  "2:\n\t"                                                                                        \
  "vmovdqu (%[bp]), %%ymm1\n\t"
// Closes the two loops.
#define QNNPY_U8S8_TAIL      \
  "add $64, %[bp]\n\t"       \
  "add $4, %[q]\n\t"         \
  "cmp %[end], %[q]\n\t"     \
  "jl 2b\n\t"                \
  "add %[stride], %[off]\n\t" \
  "dec %[runs]\n\t"          \
  "jnz 1b\n\t"
#define QNNPY_U8S8_OPERANDS                                                                                  \
  : [bp] "+r"(bp), [off] "+r"(off), [runs] "+r"(runs), [q] "=&r"(q), [end] "=&r"(end), [p] "=&r"(p)           \
  : [ar] "r"(ar), [out] "r"(out), [len] "r"(run_len), [stride] "r"(run_stride)                               \
  : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
    "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

// One tile of 6 rows x 16 columns (kHalf: 8 columns) in assembly: in intrinsics it needs 17
// vector registers (12 accumulators, two B vectors, the broadcast quad, a product and the ones),
// and GCC kept some accumulators on the stack, loading and storing them every k step. Here the
// second B vector is a memory operand and the accumulators are ymm4-ymm15. Row r of A is read at
// ar[r] + s * run_stride in `runs` runs of run_len bytes; the 16 (kHalf: 8) int32 results of row
// r are stored at out[r]. The loops test at their ends: runs >= 1 and run_len a positive multiple
// of 4 (kq >= 4 for any layer).
template <bool kHalf>
void tile_asm(const uint8_t* const* ar, int64_t runs, int64_t run_len, int64_t run_stride, const int8_t* bp,
              int32_t* const* out) {
  int64_t off = 0, q, end;
  const uint8_t* p;
  if constexpr (kHalf) {
    asm volatile(QNNPY_U8S8_HEAD QNNPY_U8S8_ROW_LO(0, 4) QNNPY_U8S8_ROW_LO(1, 6) QNNPY_U8S8_ROW_LO(2, 8)
                     QNNPY_U8S8_ROW_LO(3, 10) QNNPY_U8S8_ROW_LO(4, 12) QNNPY_U8S8_ROW_LO(5, 14) QNNPY_U8S8_TAIL
                         QNNPY_U8S8_STORE_LO(0, 4) QNNPY_U8S8_STORE_LO(1, 6) QNNPY_U8S8_STORE_LO(2, 8)
                             QNNPY_U8S8_STORE_LO(3, 10) QNNPY_U8S8_STORE_LO(4, 12) QNNPY_U8S8_STORE_LO(5, 14)
                                 QNNPY_U8S8_OPERANDS);
  } else {
    asm volatile(QNNPY_U8S8_HEAD QNNPY_U8S8_ROW(0, 4, 5) QNNPY_U8S8_ROW(1, 6, 7) QNNPY_U8S8_ROW(2, 8, 9)
                     QNNPY_U8S8_ROW(3, 10, 11) QNNPY_U8S8_ROW(4, 12, 13) QNNPY_U8S8_ROW(5, 14, 15) QNNPY_U8S8_TAIL
                         QNNPY_U8S8_STORE(0, 4, 5) QNNPY_U8S8_STORE(1, 6, 7) QNNPY_U8S8_STORE(2, 8, 9)
                             QNNPY_U8S8_STORE(3, 10, 11) QNNPY_U8S8_STORE(4, 12, 13) QNNPY_U8S8_STORE(5, 14, 15)
                                 QNNPY_U8S8_OPERANDS);
  }
}

#undef QNNPY_U8S8_ROW_LO
#undef QNNPY_U8S8_ROW_HI
#undef QNNPY_U8S8_ROW
#undef QNNPY_U8S8_STORE_LO
#undef QNNPY_U8S8_STORE
#undef QNNPY_U8S8_HEAD
#undef QNNPY_U8S8_TAIL
#undef QNNPY_U8S8_OPERANDS

// One row of A (a matrix-vector product, e.g. a linear layer on one input): two accumulators,
// where the 6-row tile would compute the same row six times.
void one_row(const uint8_t* row, const U8RowRuns& a, const int8_t* bp, int32_t* c, int64_t cols) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i lo = _mm256_setzero_si256(), hi = lo;
  for (int64_t s = 0; s < a.runs; ++s) {
    const uint8_t* p = row + s * a.run_stride;
    for (int64_t q = 0; q < a.run_len; q += 4, bp += 64) {
      const __m256i av = broadcast_4_bytes(p + q);
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp) + 1);
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
    }
  }
  store_tile_row(c, lo, hi, cols);
}

// A tile of `rows` rows into c: one row alone (one_row), at most 8 columns on the half tile (half the
// multiply-adds), else the full tile.
void tile(const uint8_t* const* ar, const U8RowRuns& a, int rows, const int8_t* bp, int32_t* c, int64_t ldc,
          int64_t cols) {
  if (rows == 1) return one_row(ar[0], a, bp, c, cols);
  store_tile(rows, c, ldc, cols, [&](int32_t* const* out, bool half) {
    if (half) return tile_asm<true>(ar, a.runs, a.run_len, a.run_stride, bp, out);
    tile_asm<false>(ar, a.runs, a.run_len, a.run_stride, bp, out);
  });
}

template <class RowAt>
void gemm(RowAt row, const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc) {
  gemm_u8s8_blocks(row, a, m, b_packed, n, c, ldc,
                   [&a](const uint8_t* const* ar, int rows, const int8_t* bp, int32_t* ct, int64_t ldct,
                        int64_t cols) { tile(ar, a, rows, bp, ct, ldct, cols); });
}

}  // namespace

void gemm_u8s8_avx2(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                    int64_t ldc) {
  gemm([a, kq](int64_t i) { return a + i * kq; }, U8RowRuns{nullptr, 1, kq, 0}, m, b_packed, n, c, ldc);
}

void gemm_u8s8_runs_avx2(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc) {
  gemm([&a](int64_t i) { return a.rows[i]; }, a, m, b_packed, n, c, ldc);
}

int64_t clamp_u8_avx2(const uint8_t* x, int64_t n, uint8_t bound, uint8_t* out, uint8_t* flags) {
  static_assert(kClampBlock == 32, "one AVX2 vector per block");
  const __m256i vb = _mm256_set1_epi8(static_cast<char>(bound));
  int64_t flagged = 0, b = 0;
  for (; (b + 1) * kClampBlock <= n; ++b) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + b * kClampBlock));
    const __m256i c = _mm256_min_epu8(v, vb);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * kClampBlock), c);
    flags[b] = _mm256_movemask_epi8(_mm256_cmpeq_epi8(c, v)) != -1;
    flagged += flags[b];
  }
  if (b * kClampBlock < n) {
    flagged += clamp_u8_scalar(x + b * kClampBlock, n - b * kClampBlock, bound, out + b * kClampBlock, flags + b);
  }
  return flagged;
}

}  // namespace qnnpy
