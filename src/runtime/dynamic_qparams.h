// The activation qparams of PyTorch's dynamic quantized linear (fbgemm engine),
// chosen at run time from each input tensor.
#pragma once

#include <cstdint>

namespace qnnpy {

// uint8 activations: qmax is 255, or 127 with reduce_range.
constexpr int32_t kDynamicQmin = 0;
int32_t dynamic_qmax(bool reduce_range);

struct DynamicQParams {
  float scale;
  int32_t zero_point;
};

// The smallest and largest of n > 0 floats (fbgemm::FindMinMax).
void find_min_max(const float* x, int64_t n, float* min, float* max);

// PyTorch's quant_utils::ChooseQuantizationParams (aten/src/ATen/native/quantized/cpu/QuantUtils.h,
// the same rules as fbgemm's) with qmin 0, qmax 255, no sparsity preservation and no power-of-two
// scale, as qlinear_dynamic.cpp calls it:
//   [lo, hi] = [min(min, 0), max(max, 0)] (float); scale = (double(hi) - lo) / (qmax - qmin) in double;
//   a scale whose float is 0 or whose float reciprocal is inf becomes 0.1; a scale below 6.1e-5f becomes
//   6.1e-5f and lo / hi are widened in float to match; the zero point comes from (lo, qmin) or (hi, qmax),
//   whichever adds the smaller terms, in double, rounded half to even and clamped to [qmin, qmax].
// The double scale is then used as a float (PackAWithQuantRowOffset and ReQuantizeForFloat take float).
DynamicQParams choose_dynamic_qparams(float min, float max, bool reduce_range);

}  // namespace qnnpy
