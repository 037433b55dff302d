#include <algorithm>

#include "runtime/layout.h"
#include "runtime/ops/runners.h"
#include "runtime/parallel.h"
#include "runtime/scratch.h"

namespace qnnpy {
namespace {

// dst[p * c + ch] = block[ch * block_stride + p]: the channels of each pixel side by side. kC > 0 fixes
// the channel count at compile time (images: 3), so the channel loop unrolls into straight moves.
template <int kC>
void interleave_planes(const uint8_t* block, int64_t block_stride, int64_t pixels, int64_t c, uint8_t* dst) {
  const int64_t channels = kC > 0 ? kC : c;
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t ch = 0; ch < channels; ++ch) *dst++ = block[ch * block_stride + p];
}

}  // namespace

// Rank-4 tensors are quantized in blocks of pixels, one channel plane's block at a time into a
// small scratch, and written to their NHWC places from there with sequential writes.
void run_quantize(const OpArgs& a) {
  const Value& out = a.out();
  const int64_t count = a.out_count();
  const float* x = a.in_buf().f.data();
  const float inv_scale = 1.0f / out.q.scale[0];
  const int32_t zp = out.q.zero_point[0], lo = dtype_min(out.dtype), hi = dtype_max(out.dtype);
  std::vector<uint8_t>& q = a.out_buf().q;
  q.resize(static_cast<size_t>(count));  // every element is written below
  if (out.shape.size() != 4) {
    parallel_slices(count, kMinElementsPerWorker, kVectorSlice, a.threads, [&](int64_t i0, int64_t i1) {
      a.k.quantize(x + i0, i1 - i0, inv_scale, zp, lo, hi, q.data() + i0);
    });
    return;
  }
  const int64_t n = out.shape[0], c = out.shape[1], hw = out.shape[2] * out.shape[3];
  constexpr int64_t kBlock = 256;  // pixels per block: c blocks of bytes stay in L1
  const int64_t blocks_per_image = (hw + kBlock - 1) / kBlock, blocks = n * blocks_per_image;
  const int threads = workers_for(count, kMinElementsPerWorker, a.threads);
  parallel_chunks(blocks, threads, [&](int64_t i, int) {
    const int64_t b = i / blocks_per_image, p0 = i % blocks_per_image * kBlock, pixels = std::min(kBlock, hw - p0);
    uint8_t* block = thread_scratch<uint8_t, 0>(static_cast<size_t>(c * kBlock));
    for (int64_t ch = 0; ch < c; ++ch)
      a.k.quantize(x + (b * c + ch) * hw + p0, pixels, inv_scale, zp, lo, hi, block + ch * kBlock);
    uint8_t* dst = q.data() + (b * hw + p0) * c;
    if (c == 3) {
      interleave_planes<3>(block, kBlock, pixels, c, dst);
    } else {
      interleave_planes<0>(block, kBlock, pixels, c, dst);
    }
  });
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
