// im2col rows of one conv group for the two GEMM paths.
#pragma once

#include <cstdint>

#include "runtime/prepared_layer.h"

namespace qnnpy {

// Geometry of a conv input (NHWC) and output.
struct ConvGeometry {
  int64_t h, w, cin, oh, ow;
};

// Rows [r0, r1) as int16 (x - zx), zeros at padding, k padded to L.kp with zeros.
void im2col_s16(const uint8_t* x, bool is_signed, const ConvGeometry& g, const PreparedLayer& L, int64_t group,
                int64_t r0, int64_t r1, int16_t* a);

// Rows [r0, r1) as raw uint8 x, zx at padding (so that its term cancels against the
// zx * colsum correction), k padded to L.kq with zeros (whose weights are zero).
void im2col_u8(const uint8_t* x, const ConvGeometry& g, const PreparedLayer& L, int64_t group, int64_t r0, int64_t r1,
               uint8_t* a);

}  // namespace qnnpy
