// The weight of torchao's affine-quantized layers (affine_linear, affine_embedding): int8 values (rows, cols),
// a float32 scale and an int8 zero point per group of `group_size` consecutive columns of a row (params
// "weight", "weight_scale", "weight_zero_point"; int attributes "group_size", "weight_bits").
// Its real value is fl(float(q - zero_point) * scale) (torchao's dequantize_affine). With the optional param
// "weight_offset" (float32, one per group: the float zero of PyTorch's CPU int4 "tinygemm" form, torchao's
// Int4OpaqueTensor, whose values are (u - 8) * scale + zero for u in [0, 15]; the weight holds u - 8 and the zero
// points are 0) it is fma(float(q - zero_point), scale, offset): one rounding, as PyTorch's AVX-512 kernel
// (aten/src/ATen/native/cpu/int4mm_kernel.cpp) dequantizes.
#pragma once

#include <string>

#include "emit/emitter.h"
#include "ops/checker.h"

namespace qnnpy {

// Checks the params and attributes above; returns the weight param.
const Param& check_affine_weight(const Checker& c);

// The dequantized float32 weight (rows, cols) in Relax: the values viewed as (rows * cols / g, g), R.dequantize
// along axis 0 with the group scales and zero points (plus the group offsets where there are), reshaped back.
// Returns its variable.
std::string emit_affine_weight(Emitter& e, const Node& n);

}  // namespace qnnpy
