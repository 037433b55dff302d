// The input of a layer on the uint8 x int8 GEMM path: bytes clamped to the layer's
// bound (so that vpmaddubsw's int16 pair sums cannot saturate), and the clamped-off
// excess kept as a sparse list that add_excess puts back exactly after the GEMM.
//
// Why the GEMM is exact: A holds min(x, bound) >= 0 (and zx at padding, required to be
// <= bound); every weight pair of the layer has |w1| + |w2| <= P, and bound = 32767 / P
// (PreparedLayer::x_bound), so |a1 w1 + a2 w2| <= bound * P <= 32767: vpmaddubsw never
// saturates, and vpmaddwd with ones sums two such int16 values exactly into int32.
// With int8 weights P <= 256, so bound >= 127: PyTorch's 7-bit (reduce_range)
// activations need no correction except for the few values above the calibrated range.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "runtime/im2col.h"
#include "runtime/prepared_layer.h"

namespace qnnpy {

struct U8s8Input {
  struct Excess {
    int64_t index;   // flat NHWC index into the input
    int32_t amount;  // x - bound
  };
  // Thread scratch of the thread that prepared it, or the input itself when the
  // kernel set's gemm_u8s8 is exact for any byte (KernelSet::u8s8_exact).
  const uint8_t* clamped = nullptr;
  std::vector<Excess> excess;
};

// Clamps x (n bytes) for layer L, unless k's gemm_u8s8 is exact for any byte, on up to
// `threads` workers. Returns false when the u8s8 path must not or should not run: L has no
// such path, padding would place zx above the bound in A, or so many bytes exceed the bound
// that their scalar correction would cost more than the int16 path saves.
bool prepare_u8s8_input(const KernelSet& k, const uint8_t* x, int64_t n, const PreparedLayer& L, int threads,
                        U8s8Input& in);

// c[r - r0][j - j0] += amount * b[k][j] for every excess element that im2col places at
// (row r, column k) of group `group`, r in [r0, r1), j in [j0, j1).
void add_excess(const U8s8Input& in, const ConvGeometry& g, const PreparedLayer& L, int64_t group, int64_t r0,
                int64_t r1, int64_t j0, int64_t j1, int32_t* c, int64_t ldc);

}  // namespace qnnpy
