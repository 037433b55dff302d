#include "runtime/conv_runner.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "runtime/im2col.h"
#include "runtime/layout.h"
#include "runtime/parallel.h"
#include "runtime/scratch.h"
#include "runtime/u8s8_input.h"

namespace qnnpy {
namespace {

// Rows [py0, py1) of image b of the input with its border (h + 2 ph rows of w + 2 pw
// pixels), raw bytes, zx at the border, so that the border's terms cancel against the
// zx * sum(w) correction in the bias.
void pad_rows(const uint8_t* x, int64_t b, int64_t py0, int64_t py1, const ConvGeometry& g, const PreparedLayer& L,
              uint8_t* dst) {
  const int64_t wp = g.w + 2 * L.pw, c = g.cin;
  const uint8_t zx = static_cast<uint8_t>(L.input_zp);  // int8 inputs: the byte of the signed zero point
  for (int64_t py = py0; py < py1; ++py, dst += wp * c) {
    const int64_t iy = py - L.ph;
    if (iy < 0 || iy >= g.h) {
      std::memset(dst, zx, wp * c);
      continue;
    }
    std::memset(dst, zx, L.pw * c);
    std::memcpy(dst + L.pw * c, x + (b * g.h + iy) * g.w * c, g.w * c);
    std::memset(dst + (L.pw + g.w) * c, zx, L.pw * c);
  }
}

// The least work (multiply-adds) for which a conv node takes one more worker: about 3-5 us
// of one core's time at the kernels' rates on AMD EPYC Zen 4 (gemm_u8s8 100-200 GMAC/s, the
// depthwise kernels 20-35 GMAC/s; benchmarks/RESULTS.md). Staying on one worker is no saving
// when the node before ran on two: half of its input then comes from the other core's cache.
// MobileNetV2's features.4.conv.2 (3.6 M multiply-adds, AVX2) took 42 us with 1 thread, 50 us
// on one worker of 2 threads and 34 us on two; its classifier (one row, 1.28 M multiply-adds
// reading 1.28 MB of weights) 16 us on one worker, 9 us on two (a lone layer; with 1 M here
// before, a node took a second worker from 2 M).
constexpr int64_t kMinGemmMacsPerWorker = int64_t{1} << 19;
constexpr int64_t kMinDepthwiseMacsPerWorker = int64_t{100} << 10;

// Where the accumulators of a layer go: requantized into the 8-bit NHWC output `q` (rows of
// L.cout), or with `to_float` scaled into the float output `f`, NCHW planes of `plane` positions.
struct LayerOutput {
  uint8_t* q = nullptr;
  float* f = nullptr;
  const FloatOutput* to_float = nullptr;
  int64_t plane = 1;
};

// Rows [r0, r1) and channels [c0, c0 + n) of the accumulators (leading dimension `ld`); `raw_x`:
// sums of raw x, corrected through L.ibias_raw_x (prepared_layer.h).
void store(const OpArgs& a, const PreparedLayer& L, const int32_t* acc, int64_t r0, int64_t r1, int64_t c0, int64_t n,
           int64_t ld, bool raw_x, const LayerOutput& o) {
  if (!o.to_float) {
    a.k.requantize(acc, r1 - r0, n, ld, L.requant(c0, raw_x), o.q + r0 * L.cout + c0, L.cout);
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t image = r / o.plane, position = r % o.plane;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t c = c0 + j;
      // The wrapping int32 add of the requantization (see raw_x_bias in prepared_layer.cpp).
      const uint32_t correction = raw_x ? static_cast<uint32_t>(L.ibias_raw_x[c]) : 0u;
      const int32_t exact = static_cast<int32_t>(static_cast<uint32_t>(acc[(r - r0) * ld + j]) + correction);
      o.f[(image * L.cout + c) * o.plane + position] =
          static_cast<float>(exact) * o.to_float->scale[c] + o.to_float->bias[c];
    }
  }
}

// Output rows [oy0, oy1) of image b by depthwise_row, each requantized from acc (ow x c). A row
// whose window rows all lie in the image reads them in place, except for its output pixels whose
// window crosses the left or right border: each of those runs on a copy of its window, zx outside
// the image. A row whose window crosses the top or bottom border runs on padded copies of its rows.
void depthwise_row_range(const OpArgs& a, const PreparedLayer& L, const ConvGeometry& g, int64_t b, int64_t oy0,
                         int64_t oy1, int32_t* acc, const LayerOutput& out) {
  const int64_t c = g.cin, wp = g.w + 2 * L.pw;
  const int64_t window_h = (L.kh - 1) * L.dh + 1, window_w = (L.kw - 1) * L.dw + 1;
  const uint8_t* x = a.in_buf().q.data();
  const uint8_t zx = static_cast<uint8_t>(L.input_zp);
  // The output pixels [ox0, ox1) whose window columns all lie in the image.
  const int64_t ox0 = std::min(g.ow, (L.pw + L.sw - 1) / L.sw);
  const int64_t ox1 = std::max(ox0, std::min(g.ow, g.w + L.pw >= window_w ? (g.w + L.pw - window_w) / L.sw + 1 : 0));
  uint8_t* padded = thread_scratch<uint8_t, 3>(static_cast<size_t>(window_h * std::max(wp, window_w) * c));
  // The kernel's geometry over the input in place, over one pixel's window copy, over padded rows.
  const DepthwiseRow inside{c, ox1 - ox0, L.kh, L.kw, L.sw, L.dh, L.dw, g.w * c};
  const DepthwiseRow one{c, 1, L.kh, L.kw, L.sw, L.dh, L.dw, window_w * c};
  const DepthwiseRow padded_rows{c, g.ow, L.kh, L.kw, L.sw, L.dh, L.dw, wp * c};
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    const int64_t iy0 = oy * L.sh - L.ph;
    if (iy0 >= 0 && iy0 + window_h <= g.h && ox1 > ox0) {
      a.k.depthwise_row(x + ((b * g.h + iy0) * g.w + ox0 * L.sw - L.pw) * c, inside, a.is_signed(),
                        L.depthwise_pairs.data(), acc + ox0 * c);
      auto border_pixel = [&](int64_t ox) {
        const int64_t ix0 = ox * L.sw - L.pw;
        for (int64_t r = 0; r < window_h; ++r) {
          const uint8_t* row = x + (b * g.h + iy0 + r) * g.w * c;
          for (int64_t px = 0; px < window_w; ++px) {
            const int64_t ix = ix0 + px;
            uint8_t* dst = padded + (r * window_w + px) * c;
            if (ix < 0 || ix >= g.w) {
              std::memset(dst, zx, static_cast<size_t>(c));
            } else {
              std::memcpy(dst, row + ix * c, static_cast<size_t>(c));
            }
          }
        }
        a.k.depthwise_row(padded, one, a.is_signed(), L.depthwise_pairs.data(), acc + ox * c);
      };
      for (int64_t ox = 0; ox < ox0; ++ox) border_pixel(ox);
      for (int64_t ox = ox1; ox < g.ow; ++ox) border_pixel(ox);
    } else {
      pad_rows(x, b, oy * L.sh, oy * L.sh + window_h, g, L, padded);
      a.k.depthwise_row(padded, padded_rows, a.is_signed(), L.depthwise_pairs.data(), acc);
    }
    const int64_t row0 = (b * g.oh + oy) * g.ow;
    store(a, L, acc, row0, row0 + g.ow, 0, c, c, true, out);
  }
}

// Each task runs the row kernel over its output rows and requantizes them (depthwise_row_range).
void run_depthwise(const OpArgs& a, const PreparedLayer& L, int64_t batch, const ConvGeometry& g, const LayerOutput& out,
                   int threads) {
  const int64_t out_rows = batch * g.oh;
  threads = workers_for(out_rows * g.ow * g.cin * L.kh * L.kw, kMinDepthwiseMacsPerWorker, threads);
  const int64_t rows_per_task = std::max<int64_t>(1, out_rows / (4 * threads));
  parallel_chunks((out_rows + rows_per_task - 1) / rows_per_task, threads, [&](int64_t task, int) {
    int32_t* acc = thread_scratch<int32_t, 1>(static_cast<size_t>(g.ow * g.cin));
    const int64_t r1 = std::min(out_rows, (task + 1) * rows_per_task);
    for (int64_t r = task * rows_per_task; r < r1;) {
      // The task's output rows within image b.
      const int64_t b = r / g.oh, oy0 = r % g.oh, oy1 = std::min(g.oh, oy0 + (r1 - r));
      depthwise_row_range(a, L, g, b, oy0, oy1, acc, out);
      r += oy1 - oy0;
    }
  });
}

// Whether the quads of interleaved rows serve a depthwise layer on kernel set k: the layer has
// them (uint8 input, int8 weights) and, where the set clamps their input, zx is within the bound
// (the border and the rows past the image are zx).
bool depthwise_quads_run(const KernelSet& k, const PreparedLayer& L) {
  return k.depthwise_quads_faster && !L.depthwise_quads.empty() && (k.u8s8_exact || L.input_zp <= L.x_bound);
}

// Puts back what interleave4's clamp took off the flagged blocks of a step's quads: a byte x above
// the bound in slot j of quad q, at input pixel ix and channel ch, adds (x - bound) * w[r][q][kx][ch][j]
// to output pixel ox of each row r with ox * sw = ix + pw - kx * dw (the weights are 0 where row r
// does not read the slot). flags: blocks per slot, the slots of the quads one after another.
void add_quads_excess(const PreparedLayer& L, const ConvGeometry& g, const uint8_t* const* slots, const uint8_t* flags,
                      int64_t blocks, int32_t bound, int64_t rows, const int8_t* const* w, int32_t* const* acc) {
  const int64_t c = g.cin, n = g.w * c;
  for (int64_t slot = 0; slot < 4 * L.quad_groups; ++slot) {
    const int64_t q = slot / 4, j = slot % 4;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      if (!flags[slot * blocks + blk]) continue;
      for (int64_t i = blk * kClampBlock; i < n && i < (blk + 1) * kClampBlock; ++i) {
        const int32_t amount = int32_t{slots[slot][i]} - bound;
        if (amount <= 0) continue;
        const int64_t ix = i / c, ch = i % c;
        for (int64_t kx = 0; kx < L.kw; ++kx) {
          const int64_t tx = ix + L.pw - kx * L.dw;  // ox * sw
          if (tx < 0 || tx % L.sw != 0 || tx / L.sw >= g.ow) continue;
          for (int64_t r = 0; r < rows; ++r)
            acc[r][tx / L.sw * c + ch] += amount * w[r][((q * L.kw + kx) * c + ch) * 4 + j];
        }
      }
    }
  }
}

// The depthwise conv over quads of interleaved rows (kernels.h, DepthwiseQuads). Tasks take steps
// of L.quad_shifts output rows of one image; a step interleaves (and clamps) the input rows its
// windows read straight from the input, zx at the border, runs the kernel for the step's rows, puts
// back the clamped-off excess and requantizes. A step whose input exceeds the bound in more than 1
// in 8 blocks (8-bit activations that use their whole range) runs depthwise_row instead, since
// each flagged block costs a scalar pass over its bytes.
void run_depthwise_quads(const OpArgs& a, const PreparedLayer& L, int64_t batch, const ConvGeometry& g,
                         const LayerOutput& out, int threads) {
  const uint8_t* x = a.in_buf().q.data();
  const int64_t c = g.cin, row_bytes = g.w * c, z_row = 4 * (g.w + 2 * L.pw) * c, border = 4 * L.pw * c;
  const int64_t shifts = L.quad_shifts, groups = L.quad_groups;
  const int64_t blocks = (row_bytes + kClampBlock - 1) / kClampBlock;
  const int32_t bound = a.k.u8s8_exact ? 255 : L.x_bound;
  const uint8_t zx = static_cast<uint8_t>(L.input_zp);
  const int64_t steps_per_image = (g.oh + shifts - 1) / shifts, steps = batch * steps_per_image;
  threads = workers_for(batch * g.oh * g.ow * c * L.kh * L.kw, kMinDepthwiseMacsPerWorker, threads);
  const int64_t steps_per_task = std::max<int64_t>(1, steps / (4 * threads));
  const DepthwiseQuads s{c, g.ow, L.kw, L.sw, L.dw, groups, z_row};
  const int64_t per_shift = groups * L.kw * c * 4;
  parallel_chunks((steps + steps_per_task - 1) / steps_per_task, threads, [&](int64_t task, int) {
    int32_t* acc = thread_scratch<int32_t, 1>(static_cast<size_t>(shifts * g.ow * c));
    uint8_t* z = thread_scratch<uint8_t, 0>(static_cast<size_t>(groups * z_row));
    uint8_t* flags = thread_scratch<uint8_t, 2>(static_cast<size_t>(4 * groups * blocks));
    uint8_t* zx_row = thread_scratch<uint8_t, 4>(static_cast<size_t>(row_bytes));
    const uint8_t** slots = thread_scratch<const uint8_t*, 0>(static_cast<size_t>(4 * groups));
    std::memset(zx_row, zx, static_cast<size_t>(row_bytes));
    for (int64_t q = 0; q < groups; ++q) {  // the border of every quad's row: zx, the same for every step
      std::memset(z + q * z_row, zx, static_cast<size_t>(border));
      std::memset(z + (q + 1) * z_row - border, zx, static_cast<size_t>(border));
    }
    const int64_t t1 = std::min(steps, (task + 1) * steps_per_task);
    for (int64_t t = task * steps_per_task; t < t1; ++t) {
      const int64_t b = t / steps_per_image, oy0 = t % steps_per_image * shifts, rows = std::min(shifts, g.oh - oy0);
      // Slot j of quad q holds padded row oy0 * sh + (4 q + j) * dh; slots past the last row read
      // (their weights are 0 for every row computed) hold zeros.
      const int64_t last = (oy0 + rows - 1) * L.sh + (L.kh - 1) * L.dh;
      int64_t flagged = 0;
      for (int64_t q = 0; q < groups; ++q) {
        for (int64_t j = 0; j < 4; ++j) {
          const int64_t py = oy0 * L.sh + (4 * q + j) * L.dh, iy = py - L.ph;
          slots[4 * q + j] = py > last ? nullptr : iy < 0 || iy >= g.h ? zx_row : x + (b * g.h + iy) * row_bytes;
        }
        flagged += a.k.interleave4(slots + 4 * q, row_bytes, static_cast<uint8_t>(bound), z + q * z_row + border,
                                   flags + 4 * q * blocks);
      }
      if (8 * flagged > 4 * groups * blocks) {
        depthwise_row_range(a, L, g, b, oy0, oy0 + rows, acc, out);
        continue;
      }
      const int8_t* w[4];
      int32_t* accs[4];
      for (int64_t r = 0; r < rows; ++r) {
        w[r] = L.depthwise_quads.data() + r * per_shift;
        accs[r] = acc + r * g.ow * c;
      }
      a.k.depthwise_quads(z, s, static_cast<int>(rows), w, accs);
      if (flagged) add_quads_excess(L, g, slots, flags, blocks, bound, rows, w, accs);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t row0 = (b * g.oh + oy0 + r) * g.ow;
        store(a, L, accs[r], row0, row0 + g.ow, 0, c, c, true, out);
      }
    }
  });
}

// Whether integer Winograd F(2x2, 3x3) pays for this output: its 2x2 tiles may overhang an odd
// output size, and the overhang is work done for nothing (ResNet-18's 7x7 outputs: 8x8 tiles, 31%
// more, slower than the direct GEMM on AVX2 in benchmarks/RESULTS.md); at most 20% is accepted.
bool winograd_pays(const ConvGeometry& g) {
  const int64_t tiled = 4 * ((g.oh + 1) / 2) * ((g.ow + 1) / 2);
  return 5 * tiled <= 6 * g.oh * g.ow;
}

// Integer Winograd F(2x2, 3x3) (kernels.h) in tasks of consecutive tiles of one image: each task
// pads the input rows its tiles read (zx at the border, and past the image where tiles overhang),
// transforms them into 16 int16 planes, runs the 16 int16 GEMMs with the prepared U_e, transforms
// back to the exact accumulators of (x - zx)(w - zw) and requantizes the output pixels.
void run_winograd(const OpArgs& a, const PreparedLayer& L, int64_t batch, const ConvGeometry& g, const LayerOutput& out,
                  int threads) {
  const uint8_t* x = a.in_buf().q.data();
  const int64_t c = g.cin, n = L.cout, tiles_w = (g.ow + 1) / 2, tiles_h = (g.oh + 1) / 2;
  const int64_t tiles_per_image = tiles_w * tiles_h, wp = 2 * tiles_w + 2, row_bytes = wp * c;
  threads = workers_for(batch * g.oh * g.ow * L.k * n, kMinGemmMacsPerWorker, threads);
  // Tiles per task (the rows of each int16 GEMM, a multiple of its 6-row tile): the 16 planes in and
  // out (2c + 4n bytes per tile each) within about 384 KiB of L2, and work for every worker.
  const int64_t by_cache = (384 << 10) / (16 * (2 * c + 4 * n));
  const int64_t by_workers = (batch * tiles_per_image + threads - 1) / threads;
  const int64_t task_tiles = std::max<int64_t>(6, std::min(by_cache, by_workers) / 6 * 6);
  const int64_t tasks_per_image = (tiles_per_image + task_tiles - 1) / task_tiles;
  const uint8_t zx = static_cast<uint8_t>(L.input_zp);
  const int64_t per = packed_b_size(c, n);
  parallel_chunks(batch * tasks_per_image, threads, [&](int64_t task, int) {
    const int64_t b = task / tasks_per_image, t0 = task % tasks_per_image * task_tiles;
    const int64_t t1 = std::min(tiles_per_image, t0 + task_tiles), tiles = t1 - t0;
    const int64_t ty0 = t0 / tiles_w, ty1 = (t1 - 1) / tiles_w + 1, padded_rows = 2 * (ty1 - ty0) + 2;
    uint8_t* padded = thread_scratch<uint8_t, 3>(static_cast<size_t>(padded_rows * row_bytes));
    for (int64_t py = 0; py < padded_rows; ++py) {
      uint8_t* dst = padded + py * row_bytes;
      const int64_t iy = 2 * ty0 + py - L.ph;
      std::memset(dst, zx, static_cast<size_t>(row_bytes));
      if (iy < 0 || iy >= g.h) continue;
      const int64_t kept = std::min(g.w, wp - L.pw);  // image columns within the padded row
      std::memcpy(dst + L.pw * c, x + (b * g.h + iy) * g.w * c, static_cast<size_t>(kept * c));
    }
    int16_t* v = thread_scratch<int16_t, 0>(static_cast<size_t>(16 * tiles * c));
    int32_t* m = thread_scratch<int32_t, 0>(static_cast<size_t>(16 * tiles * n));
    int32_t* y = thread_scratch<int32_t, 1>(static_cast<size_t>(2 * wp * n));
    // The task's tiles, one tile row's run at a time: tile row ty, columns [tx0, tx1).
    auto for_each_run = [&](auto fn) {
      for (int64_t t = t0; t < t1;) {
        const int64_t ty = t / tiles_w, tx0 = t % tiles_w, tx1 = std::min(tiles_w, tx0 + (t1 - t));
        fn(ty, tx0, tx1, t - t0);
        t += tx1 - tx0;
      }
    };
    for_each_run([&](int64_t ty, int64_t tx0, int64_t tx1, int64_t first) {
      const WinogradInput in{tx1 - tx0, c, row_bytes, tiles * c, a.is_signed(), L.input_zp};
      a.k.winograd_input(padded + 2 * (ty - ty0) * row_bytes + 2 * tx0 * c, in, v + first * c);
    });
    for (int e = 0; e < 16; ++e) {
      a.k.gemm_s16(v + e * tiles * c, tiles, c, L.winograd_b.data() + e * per, n, m + e * tiles * n, n);
    }
    for_each_run([&](int64_t ty, int64_t tx0, int64_t tx1, int64_t first) {
      const WinogradOutput wo{tx1 - tx0, n, tiles * n, 2 * (tx1 - tx0) * n};
      a.k.winograd_output(m + first * n, wo, y);
      const int64_t ox0 = 2 * tx0, ox1 = std::min(g.ow, 2 * tx1);
      for (int64_t dy = 0; dy < 2 && 2 * ty + dy < g.oh; ++dy) {
        const int64_t row0 = (b * g.oh + 2 * ty + dy) * g.ow;
        store(a, L, y + dy * wo.y_row, row0 + ox0, row0 + ox1, 0, n, n, false, out);
      }
    });
  });
}

// The window columns of output rows [oy0, oy1) of image b: output row oy's at data + (oy - oy0) *
// row_bytes, input pixel px's kh * cin bytes at px * pixel_bytes within it.
struct WindowColumns {
  const uint8_t* data;
  int64_t row_bytes, pixel_bytes;
};

// The window columns (PreparedLayer::window_columns) of output rows [oy0, oy1) of image b, each of the
// (ow - 1) sw + kw input pixels its windows read, straight from the input: kernel rows above or below
// the image read a row of zx, pixels left or right of it are zx.
WindowColumns window_columns_of_rows(const KernelSet& k, const uint8_t* x, const ConvGeometry& g,
                                     const PreparedLayer& L, int64_t b, int64_t oy0, int64_t oy1) {
  const int64_t c = g.cin, pixel = L.kh * c, used = (g.ow - 1) * L.sw + L.kw, column_row = used * pixel;
  // Pixel px holds input column px - pw: those of [left, right) lie in the image.
  const int64_t left = std::min(used, L.pw), right = std::min(used, L.pw + g.w);
  const uint8_t zx = static_cast<uint8_t>(L.input_zp);
  uint8_t* columns = thread_scratch<uint8_t, 0>(static_cast<size_t>((oy1 - oy0) * column_row + kWindowColumnsSlack));
  uint8_t* zx_row = thread_scratch<uint8_t, 4>(static_cast<size_t>(g.w * c));
  std::memset(zx_row, zx, static_cast<size_t>(g.w * c));
  const uint8_t** rows = thread_scratch<const uint8_t*, 1>(static_cast<size_t>(L.kh));
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    uint8_t* dst = columns + (oy - oy0) * column_row;
    for (int64_t ky = 0; ky < L.kh; ++ky) {
      const int64_t iy = oy * L.sh - L.ph + ky * L.dh;
      rows[ky] = iy >= 0 && iy < g.h ? x + (b * g.h + iy) * g.w * c : zx_row;
    }
    std::memset(dst, zx, static_cast<size_t>(left * pixel));
    k.window_columns(rows, L.kh, c, right - left, dst + left * pixel);
    // After the kernel, which may write past its pixels.
    std::memset(dst + right * pixel, zx, static_cast<size_t>((used - right) * pixel));
  }
  // gemm_u8s8_runs reads up to 3 bytes past the last window (kernels.h, U8RowRuns).
  std::memset(columns + (oy1 - oy0) * column_row, 0, 4);
  return {columns, column_row, pixel};
}

// Rows [r0, r1) of the implicit-GEMM conv: per image, the task pads the input rows its output rows
// read (zx at the border, as im2col_u8 places it), or copies their window columns, points each
// output pixel at its window there and calls gemm(A, s0, s1) for its rows [s0, s1), which runs
// gemm_u8s8_runs (or its fused form): each kernel row's kw * cin bytes read in place (or the
// window's columns as one run).
template <class Gemm>
void gemm_rows_in_place(const KernelSet& k, const uint8_t* x, const ConvGeometry& g, const PreparedLayer& L, int64_t r0,
                        int64_t r1, Gemm gemm) {
  const int64_t wp = g.w + 2 * L.pw, pixels = g.oh * g.ow, row_bytes = wp * g.cin;
  const int64_t window = (L.kh - 1) * L.dh + 1;  // padded rows read by one output row
  // gemm_u8s8_runs reads up to 3 bytes past a window's last run (kernels.h, U8RowRuns).
  constexpr int64_t kSlack = 4;
  for (int64_t s0 = r0; s0 < r1;) {
    const int64_t b = s0 / pixels, s1 = std::min(r1, (b + 1) * pixels);
    const int64_t oy0 = (s0 - b * pixels) / g.ow, oy1 = (s1 - 1 - b * pixels) / g.ow + 1;
    const uint8_t** rows = thread_scratch<const uint8_t*, 0>(static_cast<size_t>(s1 - s0));
    int64_t oy = oy0, ox = (s0 - b * pixels) % g.ow;
    if (L.window_columns) {
      const WindowColumns columns = window_columns_of_rows(k, x, g, L, b, oy0, oy1);
      for (int64_t r = s0; r < s1; ++r, ++ox) {
        if (ox == g.ow) ox = 0, ++oy;
        rows[r - s0] = columns.data + (oy - oy0) * columns.row_bytes + ox * L.sw * columns.pixel_bytes;
      }
    } else {
      const int64_t py0 = oy0 * L.sh, py1 = (oy1 - 1) * L.sh + window;
      const int64_t padded_bytes = (py1 - py0) * row_bytes;
      uint8_t* padded = thread_scratch<uint8_t, 3>(static_cast<size_t>(padded_bytes + kSlack));
      pad_rows(x, b, py0, py1, g, L, padded);
      std::memset(padded + padded_bytes, 0, kSlack);
      for (int64_t r = s0; r < s1; ++r, ++ox) {
        if (ox == g.ow) ox = 0, ++oy;
        rows[r - s0] = padded + (oy * L.sh - py0) * row_bytes + ox * L.sw * g.cin;
      }
    }
    gemm(U8RowRuns{rows, L.runs(), L.run_len, L.dh * row_bytes}, s0, s1);
    s0 = s1;
  }
}

// im2col + GEMM + requantization in tasks over the worker pool; returns the kernel used. x: the
// input's bytes, NHWC for a conv, rows of the last axis for a linear.
const char* run_gemm(const OpArgs& a, const PreparedLayer& L, const std::vector<uint8_t>& x, const ConvGeometry& g,
                     int64_t rows, const LayerOutput& out, int threads) {
  U8s8Input u8_in;
  const bool u8s8 = prepare_u8s8_input(a.k, x.data(), static_cast<int64_t>(x.size()), L, threads, u8_in);
  const bool sgn = a.is_signed();
  const int64_t cpg = L.cout_per_group, row_len = u8s8 ? L.kq : L.kp;
  threads = workers_for(rows * L.k * L.cout, kMinGemmMacsPerWorker, threads);
  const int64_t per_group = u8s8 ? packed_b_u8s8_size(L.k, cpg) : packed_b_size(L.k, cpg);
  // Tasks: equal chunks of at most kMaxChunkRows rows in multiples of the GEMM tile's 6
  // rows, as many as a multiple of the workers so that they finish together. With
  // fewer rows than 96 per worker and one group, the workers split the column blocks
  // instead (each then builds the same im2col rows).
  constexpr int64_t kMaxChunkRows = 192;
  const int64_t blocks = (cpg + kGemmNR - 1) / kGemmNR;
  const bool split_columns = threads > 1 && L.groups == 1 && rows < 96 * threads;
  const bool in_place = u8s8 && L.run_len > 0 && a.k.gemm_u8s8_runs != nullptr;
  int64_t row_chunks = (rows + kMaxChunkRows - 1) / kMaxChunkRows;
  if (threads > 1 && !split_columns) row_chunks = (row_chunks + threads - 1) / threads * threads;
  int64_t chunk_rows = ((rows + row_chunks - 1) / row_chunks + 5) / 6 * 6;
  // A task copies the window columns of every output row it touches: chunks of whole output rows
  // (and whole tiles) copy each row once. Up to 2 kMaxChunkRows, where every worker gets one.
  const int64_t whole_rows = std::lcm(g.ow, int64_t{6});
  if (in_place && L.window_columns && !split_columns && whole_rows <= 2 * kMaxChunkRows &&
      rows >= whole_rows * threads) {
    chunk_rows = whole_rows;
    row_chunks = (rows + chunk_rows - 1) / chunk_rows;
  }
  const int64_t col_chunks = split_columns ? std::min<int64_t>(blocks, threads) : 1;
  const int64_t blocks_per_chunk = (blocks + col_chunks - 1) / col_chunks;
  const int64_t tasks = row_chunks * col_chunks;
  const bool pointwise = L.pointwise() && L.kq == L.k;
  // The requantization fused into the u8 x s8 GEMM (KernelSet::gemm_u8s8_runs_requantized) where the set
  // has it, the output is 8-bit and no clamped-off excess must reach the accumulators first.
  const bool fused = u8s8 && !out.to_float && u8_in.excess.empty() && a.k.gemm_u8s8_runs_requantized != nullptr;
  parallel_chunks(tasks, threads, [&](int64_t task, int) {
    const int64_t r0 = task / col_chunks * chunk_rows, r1 = std::min(rows, r0 + chunk_rows);
    const int64_t j0 = task % col_chunks * blocks_per_chunk * kGemmNR;
    const int64_t j1 = std::min(cpg, j0 + blocks_per_chunk * kGemmNR);
    if (j0 >= j1 || r0 >= r1) return;
    uint8_t* abuf = in_place ? nullptr
                             : thread_scratch<uint8_t, 0>(static_cast<size_t>(chunk_rows * row_len * (u8s8 ? 1 : 2)));
    int32_t* cbuf = fused ? nullptr : thread_scratch<int32_t, 0>(static_cast<size_t>(chunk_rows * cpg)) + j0;
    for (int64_t grp = 0; grp < L.groups; ++grp) {
      const int64_t c0 = grp * cpg + j0;
      // Rows [s0, s1) of A (U8RowRuns) times the columns [j0, j1) of b: into cbuf, or requantized into the output.
      auto u8s8_gemm = [&](const U8RowRuns& ar, int64_t s0, int64_t s1, const int8_t* b) {
        if (fused) {
          a.k.gemm_u8s8_runs_requantized(ar, s1 - s0, b, j1 - j0, L.requant(c0, true), a.k.requantize,
                                         out.q + s0 * L.cout + c0, L.cout);
        } else {
          a.k.gemm_u8s8_runs(ar, s1 - s0, b, j1 - j0, cbuf + (s0 - r0) * cpg, cpg);
        }
      };
      if (in_place) {  // one group
        const int8_t* b = L.runs_b() + j0 * L.runs() * L.run_len;
        gemm_rows_in_place(a.k, u8_in.clamped, g, L, r0, r1,
                           [&](const U8RowRuns& ar, int64_t s0, int64_t s1) { u8s8_gemm(ar, s0, s1, b); });
        if (!fused) add_excess(u8_in, g, L, grp, r0, r1, j0, j1, cbuf, cpg);
      } else if (u8s8) {
        const uint8_t* rows_u8 = abuf;
        if (pointwise) {
          rows_u8 = u8_in.clamped + r0 * L.kq;  // the im2col rows are the input pixels themselves
        } else {
          im2col_u8(u8_in.clamped, g, L, grp, r0, r1, abuf);
        }
        const int8_t* b = L.packed_b_u8s8.data() + grp * per_group + j0 * L.kq;
        if (fused) {
          const uint8_t** ar = thread_scratch<const uint8_t*, 2>(static_cast<size_t>(r1 - r0));
          for (int64_t i = 0; i < r1 - r0; ++i) ar[i] = rows_u8 + i * L.kq;
          u8s8_gemm(U8RowRuns{ar, 1, L.kq, 0}, r0, r1, b);
        } else {
          a.k.gemm_u8s8(rows_u8, r1 - r0, L.kq, b, j1 - j0, cbuf, cpg);
          add_excess(u8_in, g, L, grp, r0, r1, j0, j1, cbuf, cpg);
        }
      } else {
        int16_t* a16 = reinterpret_cast<int16_t*>(abuf);
        im2col_s16(x.data(), sgn, g, L, grp, r0, r1, a16);
        a.k.gemm_s16(a16, r1 - r0, L.kp, L.packed_b.data() + grp * per_group + j0 * L.kp, j1 - j0, cbuf, cpg);
      }
      if (!fused) store(a, L, cbuf, r0, r1, c0, j1 - j0, cpg, u8s8, out);
    }
  });
  if (in_place && fused) return L.window_columns ? "gemm_u8s8_columns_requantized" : "gemm_u8s8_runs_requantized";
  if (in_place) return L.window_columns ? "gemm_u8s8_columns" : "gemm_u8s8_runs";
  if (fused) return "gemm_u8s8_requantized";
  return u8s8 ? "gemm_u8s8" : "gemm_s16";
}

}  // namespace

const char* run_weighted(const OpArgs& a, const PreparedLayer& L, bool spatial, const FloatOutput* to_float) {
  const int threads = a.threads;
  const Value &xv = a.in(), &yv = a.out();
  Buffer& y = a.out_buf();
  int64_t batch;
  ConvGeometry g{};
  if (spatial) {
    batch = xv.shape[0], g.cin = xv.shape[1], g.h = xv.shape[2], g.w = xv.shape[3];
    g.oh = yv.shape[2], g.ow = yv.shape[3];
  } else {
    g.cin = xv.shape.back(), batch = num_elements(xv.shape) / g.cin, g.h = g.w = g.oh = g.ow = 1;
  }
  const int64_t rows = batch * g.oh * g.ow;
  LayerOutput out;
  out.to_float = to_float;
  if (to_float) {
    y.f.resize(static_cast<size_t>(rows * L.cout));  // every element is written below
    out.f = y.f.data();
    out.plane = g.oh * g.ow;
  } else {
    y.torch_channels_last = spatial;  // fbgemm and qnnpack convs write channels_last
    y.q.resize(static_cast<size_t>(rows * L.cout));  // every element is written below
    out.q = y.q.data();
  }

  if (L.depthwise) {
    if (depthwise_quads_run(a.k, L)) {
      run_depthwise_quads(a, L, batch, g, out, threads);
      return "depthwise_quads";
    }
    run_depthwise(a, L, batch, g, out, threads);
    return "depthwise";
  }

  if (a.k.winograd_faster && !L.winograd_b.empty() && winograd_pays(g)) {
    run_winograd(a, L, batch, g, out, threads);
    return "winograd";
  }
  // A linear node's rows run along the last axis of the logical shape. Rank-4 tensors are stored
  // NHWC (runtime/layout.h): such an input goes to the GEMM in logical order, its output back to NHWC.
  if (spatial || xv.shape.size() != 4) return run_gemm(a, L, a.in_buf().q, g, rows, out, threads);
  const char* kernel = run_gemm(a, L, to_logical(a.in_buf().q, xv.shape), g, rows, out, threads);
  if (!to_float) y.q = to_storage(std::move(y.q), yv.shape);
  return kernel;
}

}  // namespace qnnpy
