// The float32 sum PyTorch's CPU sum kernel computes over a contiguous row (what aten's mean of a
// contiguous NCHW tensor over H and W adds up: a PT2E island's float mean).
#pragma once

#include <cstdint>

namespace qnnpy {

// The sum of x[0..n) in the order of aten/src/ATen/native/cpu/SumKernel.cpp (cascade_sum, a
// contiguous inner reduction): rows of at least 8 values are read as 8-lane vectors, summed four
// vectors at a time (row_sum's interleaving) in cascade levels (multi_row_sum), the leftover
// values added one by one from 0, then the 8 lanes in order; shorter rows take the same cascade
// one value per lane. 8 lanes is Vectorized<float>'s width in the kernel PyTorch 2.14 runs on
// x86-64 with AVX2 or AVX-512 (tests/test_pt2e_float_mean.py checks it against torch.sum).
float aten_contiguous_sum(const float* x, int64_t n);

}  // namespace qnnpy
