#include <algorithm>

#include "runtime/layout.h"
#include "runtime/ops/runners.h"
#include "runtime/scratch.h"

namespace qnnpy {

// Rank-4 tensors are quantized in blocks of pixels, one channel plane's block at a time into a
// small scratch, and written to their NHWC places from there with sequential writes. On one
// thread: a quantize node mostly reads the graph's input, which the calling thread has just copied
// (Executor::run), and a second worker reading half of it from that core's cache made ResNet-18's
// input node slower (1x3x224x224, AVX2: 22 us on one worker, 32 us on two).
void run_quantize(const OpArgs& a) {
  const Value& out = a.out();
  const int64_t count = a.out_count();
  const float* x = a.in_buf().f.data();
  const float inv_scale = 1.0f / out.q.scale[0];
  const int32_t zp = out.q.zero_point[0], lo = dtype_min(out.dtype), hi = dtype_max(out.dtype);
  std::vector<uint8_t>& q = a.out_buf().q;
  q.resize(static_cast<size_t>(count));  // every element is written below
  if (out.shape.size() != 4) {
    a.k.quantize(x, count, inv_scale, zp, lo, hi, q.data());
    return;
  }
  const int64_t n = out.shape[0], c = out.shape[1], hw = out.shape[2] * out.shape[3];
  constexpr int64_t kBlock = 256;  // pixels per block: c blocks of bytes stay in L1
  uint8_t* block = thread_scratch<uint8_t, 0>(static_cast<size_t>(c * kBlock));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p0 = 0; p0 < hw; p0 += kBlock) {
      const int64_t pixels = std::min(kBlock, hw - p0);
      for (int64_t ch = 0; ch < c; ++ch)
        a.k.quantize(x + (b * c + ch) * hw + p0, pixels, inv_scale, zp, lo, hi, block + ch * kBlock);
      a.k.interleave_planes(block, kBlock, pixels, c, q.data() + (b * hw + p0) * c);
    }
}

void run_dequantize(const OpArgs& a) {
  const Value& xv = a.in();
  const Buffer& x = a.in_buf();
  const std::vector<uint8_t> logical = to_logical(x.q, xv.shape);
  Buffer& y = a.out_buf();
  y.f.resize(a.out_count());
  a.k.dequantize(logical.data(), a.out_count(), a.is_signed(), xv.q.scale[0], xv.q.zero_point[0], y.f.data());
}

}  // namespace qnnpy
