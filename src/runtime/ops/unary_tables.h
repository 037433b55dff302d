// 256-entry tables for ops whose output is a function of one 8-bit input value.
//
// PyTorch's element-wise kernels (fbgemm engine) compute vector lanes and the
// scalar remainder of each row with slightly different float formulas
// (aten/src/ATen/native/cpu/Loops.h: blocks of 64, then a scalar tail), so an
// op has one table for each; QNNPACK builds a single table itself.
#pragma once

#include <array>
#include <cstdint>

#include "runtime/ops/op_args.h"

namespace qnnpy {

using ByteTable = std::array<uint8_t, 256>;

struct UnaryTables {
  ByteTable vector{}, tail{};
};

// The tables of a unary node (hardswish, hardsigmoid, sigmoid, leaky_relu,
// clamp, add_scalar, mul_scalar) under the node's profile.
UnaryTables unary_tables(const OpArgs& a);

// Requantization of one value from (in_scale, in_zp) to (out_scale, out_zp) as
// PyTorch's qcat does it: vector lanes dequantize with fma and quantize with
// (float)(1.0 / out_scale); the scalar lanes use dequantize_val / quantize_val.
UnaryTables requantize_tables(bool is_signed, float in_scale, int32_t in_zp, float out_scale, int32_t out_zp,
                              int32_t lo, int32_t hi);

}  // namespace qnnpy
