// Bounds every validated graph satisfies, so that sizes computed from a graph
// (built or read from a file) cannot overflow int64 or allocate without bound, and
// every integer accumulator of the kernels stays inside int32.
#pragma once

#include <cstdint>

namespace qnnpy {

// Largest extent of any tensor axis and largest absolute value of any int attribute
// (stride, padding, kernel, output size, ...): products of two stay far inside int64.
constexpr int64_t kMaxExtent = int64_t{1} << 24;
// Largest element count of one tensor (activation or param): 2^28 (1 GiB as float32).
constexpr int64_t kMaxElements = int64_t{1} << 28;
constexpr int64_t kMaxRank = 8;

// The GEMM, depthwise and transposed-conv kernels, scalar and AVX2, accumulate products of two
// 8-bit differences (x - zx) * (w - zw), each of magnitude <= 255 * 255, in int32. A
// reduction of at most this many terms cannot overflow (33025 * 65025 < 2^31), so
// the scalar sums (where overflow is undefined) and the AVX2 sums (which wrap)
// agree; longer reductions are refused.
constexpr int64_t kMaxReductionLength = INT32_MAX / (255 * 255);
// The pooling kernels sum 8-bit values (<= 255) of one window in int32.
constexpr int64_t kMaxWindowTaps = INT32_MAX / 255;

}  // namespace qnnpy
