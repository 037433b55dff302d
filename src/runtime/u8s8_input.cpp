#include "runtime/u8s8_input.h"

#include <atomic>

#include "runtime/parallel.h"
#include "runtime/scratch.h"

namespace qnnpy {

// The least bytes for which the clamp takes one more worker: about 2.5 us of one core's time
// (400 KB take about 30 us on AVX2, AMD EPYC Zen 4). With 128 KB, MobileNetV2's projection convs
// of 75-150 KB inputs clamped on one worker; from 32 KB they take 3-11 us less with 2 threads
// (features.6.conv.2 46 -> 34 us; 8 KB gains no more; benchmarks/RESULTS.md).
constexpr int64_t kMinClampBytesPerWorker = int64_t{32} << 10;

bool prepare_u8s8_input(const KernelSet& k, const uint8_t* x, int64_t n, const PreparedLayer& L, int threads,
                        U8s8Input& in) {
  if (!L.has_u8s8()) return false;
  in.excess.clear();
  if (k.u8s8_exact) {  // any byte is exact: no clamp, no excess
    in.clamped = x;
    return true;
  }
  if ((L.ph > 0 || L.pw > 0) && L.input_zp > L.x_bound) return false;
  const int64_t blocks = (n + kClampBlock - 1) / kClampBlock;
  uint8_t* clamped = thread_scratch<uint8_t, 1>(static_cast<size_t>(n));
  uint8_t* flags = thread_scratch<uint8_t, 2>(static_cast<size_t>(blocks));
  // Slices of whole clamp blocks, each flagging its own blocks.
  std::atomic<int64_t> flagged{0};
  parallel_slices(n, kMinClampBytesPerWorker, kClampBlock, threads, [&](int64_t i0, int64_t i1) {
    flagged += k.clamp_u8(x + i0, i1 - i0, L.x_bound, clamped + i0, flags + i0 / kClampBlock);
  });
  in.clamped = clamped;
  // Each excess element costs about kh * kw * cout scalar multiply-adds, roughly what
  // the GEMM spends per input element vectorized; past 1 in 256 elements, use int16.
  const int64_t limit = n / 256;
  if (flagged > limit) return false;
  if (flagged == 0) return true;  // no excess: the flags need not be walked
  for (int64_t b = 0; b < blocks; ++b) {
    if (!flags[b]) continue;
    for (int64_t i = b * kClampBlock; i < n && i < (b + 1) * kClampBlock; ++i) {
      if (x[i] > L.x_bound) in.excess.push_back({i, int32_t{x[i]} - L.x_bound});
    }
  }
  return static_cast<int64_t>(in.excess.size()) <= limit;
}

void add_excess(const U8s8Input& in, const ConvGeometry& g, const PreparedLayer& L, int64_t group, int64_t r0,
                int64_t r1, int64_t j0, int64_t j1, int32_t* c, int64_t ldc) {
  const int64_t cg = L.cin_per_group, quads = L.kq / 4;
  const int8_t* bp = L.packed_b_u8s8.data() + group * packed_b_u8s8_size(L.k, L.cout_per_group);
  for (const U8s8Input::Excess& e : in.excess) {
    const int64_t pixel = e.index / g.cin, ic = e.index % g.cin - group * cg;
    if (ic < 0 || ic >= cg) continue;
    const int64_t ix = pixel % g.w, iy = pixel / g.w % g.h, b = pixel / (g.w * g.h);
    for (int64_t ky = 0; ky < L.kh; ++ky) {
      const int64_t ty = iy + L.ph - ky * L.dh;  // oy * sh
      if (ty < 0 || ty % L.sh != 0 || ty / L.sh >= g.oh) continue;
      for (int64_t kx = 0; kx < L.kw; ++kx) {
        const int64_t tx = ix + L.pw - kx * L.dw;  // ox * sw
        if (tx < 0 || tx % L.sw != 0 || tx / L.sw >= g.ow) continue;
        const int64_t row = (b * g.oh + ty / L.sh) * g.ow + tx / L.sw;
        if (row < r0 || row >= r1) continue;
        const int64_t kk = (ky * L.kw + kx) * cg + ic;
        int32_t* dst = c + (row - r0) * ldc;
        for (int64_t j = j0; j < j1; ++j) {
          // pack_b_u8s8 layout: block j / kGemmNR, quad kk / 4, column j % kGemmNR, byte kk % 4.
          const int8_t w = bp[((j / kGemmNR * quads + kk / 4) * kGemmNR + j % kGemmNR) * 4 + kk % 4];
          dst[j - j0] += e.amount * w;
        }
      }
    }
  }
}

}  // namespace qnnpy
