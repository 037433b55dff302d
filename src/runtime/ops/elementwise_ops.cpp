#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/ops/runners.h"
#include "runtime/parallel.h"

namespace qnnpy {
namespace {

// The add's slices start on multiples of 64 elements: whole vectors for every kernel set.
constexpr int64_t kVectorSlice = 64;

// QNNPACK pytorch_qnnp_compute_add_quantization_params.
AddFixedParams fixed_add_params(const OpArgs& a, bool relu) {
  const Value &xv = a.in(0), &bv = a.in(1), &out = a.out();
  const float a_ratio = xv.q.scale[0] / out.q.scale[0], b_ratio = bv.q.scale[0] / out.q.scale[0];
  const float larger = std::max(a_ratio, b_ratio);
  uint32_t bits;
  std::memcpy(&bits, &larger, sizeof bits);
  const int32_t shift = 21 - (static_cast<int32_t>(bits >> 23) - 127);
  if (shift < 13 || shift > 31) {
    a.fail("input/output scale ratio " + std::to_string(larger) + " is outside QNNPACK's supported range [2^-14, 2^8)");
  }
  const float two_shift = static_cast<float>(uint64_t{1} << shift);
  AddFixedParams p;
  p.a_mult = static_cast<int32_t>(std::lrintf(a_ratio * two_shift));
  p.b_mult = static_cast<int32_t>(std::lrintf(b_ratio * two_shift));
  p.zp_term = static_cast<int32_t>(-(static_cast<uint32_t>(p.a_mult) * static_cast<uint32_t>(xv.q.zero_point[0]) +
                                     static_cast<uint32_t>(p.b_mult) * static_cast<uint32_t>(bv.q.zero_point[0])));
  p.shift = shift;
  p.out_zp = out.q.zero_point[0];
  p.lo = relu ? p.out_zp : dtype_min(out.dtype);
  p.hi = dtype_max(out.dtype);
  return p;
}

}  // namespace

void run_add(const OpArgs& a) {
  const Value &xv = a.in(0), &bv = a.in(1), &out = a.out();
  const bool relu = a.node.int_attr("relu") != 0;
  const int64_t count = a.out_count();
  Buffer& y = a.out_buf();
  y.torch_channels_last = a.in_buf(0).torch_channels_last;
  y.q.resize(count);
  const uint8_t *x0 = a.in_buf(0).q.data(), *x1 = a.in_buf(1).q.data();
  uint8_t* dst = y.q.data();
  if (!follows_int32_bias_rules(a.profile)) {  // PyTorch's quantized add of the fbgemm and x86 engines
    const AddFloatParams p{xv.q.scale[0], bv.q.scale[0], 1.0f / out.q.scale[0], xv.q.zero_point[0], bv.q.zero_point[0],
                           out.q.zero_point[0], dtype_min(out.dtype), dtype_max(out.dtype), relu};
    parallel_slices(count, kMinElementsPerWorker, kVectorSlice, a.threads, [&](int64_t i0, int64_t i1) {
      a.k.add_float(x0 + i0, x1 + i0, i1 - i0, a.is_signed(), p, dst + i0);
    });
  } else {
    const AddFixedParams p = fixed_add_params(a, relu);
    parallel_slices(count, kMinElementsPerWorker, kVectorSlice, a.threads, [&](int64_t i0, int64_t i1) {
      a.k.add_fixed(x0 + i0, x1 + i0, i1 - i0, a.is_signed(), p, dst + i0);
    });
  }
}

void run_relu(const OpArgs& a) {
  Buffer& y = a.out_buf();
  y.torch_channels_last = a.in_buf().torch_channels_last;
  y.q.resize(a.out_count());
  a.k.relu(a.in_buf().q.data(), a.out_count(), a.is_signed(), a.in().q.zero_point[0], y.q.data());
}

}  // namespace qnnpy
