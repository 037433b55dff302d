// The window columns of one output row (kernels.h, KernelSet::window_columns), byte by byte:
// exactly the kh * c * width bytes of the contract, nothing past them.
#include <cstring>

#include "kernels/scalar/scalar_kernels.h"

namespace qnnpy {

void window_columns_scalar(const uint8_t* const* rows, int64_t kh, int64_t c, int64_t width, uint8_t* dst) {
  for (int64_t px = 0; px < width; ++px)
    for (int64_t ky = 0; ky < kh; ++ky, dst += c) std::memcpy(dst, rows[ky] + px * c, static_cast<size_t>(c));
}

}  // namespace qnnpy
