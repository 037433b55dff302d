// The u8 x s8 GEMM of the amx kernel set, written once against the tile interface
// (kernels/amx/tiles.h) and instantiated twice: on the instructions (gemm_instructions.cpp) and on
// the software model (gemm_model.cpp), so that the tiling, packing, edges and tails that run on an
// AMX CPU are the ones the twin tests check on any x86-64 CPU.
//
// One configuration for the whole call, every tile 16 rows x 64 bytes: C00, C01, C10, C11 (a block
// of 32 rows x 32 columns), A0, A1 (16 rows of A each, 64 bytes of k) and B0, B1 (16 quads of k for
// 16 columns each). Per k tile, two A and two B loads feed four tdpbusd. Edges never change the
// configuration (ldtilecfg zeroes every tile):
// * k: B is pack_b_u8s8's layout, whose block of 16 columns is k / 4 rows of 64 bytes, i.e. whole
//   B tiles (stride 64) but for the k tail; the tail tile of each block is copied into a tile that
//   is zero past k, so A's bytes there (whatever they are) add nothing.
// * rows: the C rows past m are not written out (A's rows there are whatever the panel held).
// * columns: pack_b_u8s8 pads n to whole blocks of 16 (zero weights); the C columns past n are not
//   written out, and a last odd block runs with C00 (and C10) alone.
// A is read in place (tileloadd with the rows' stride) where a tile's 16 rows lie equally spaced and
// its 64 bytes within one run (run_len a multiple of 64): dense rows (a pointwise conv, im2col) and
// a conv's output pixels along one output row. Otherwise its rows are copied into a panel of whole
// tiles. Each block of results is stored from the C tiles into 4 KiB of int32 and
// written out at once, as int32 or requantized (fused: it is still in L1).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/amx/tiles.h"
#include "kernels/kernels.h"
#include "runtime/scratch.h"

namespace qnnpy::amx {

constexpr int kTileRows = 16;
constexpr int64_t kTileBytes = 64;
constexpr int64_t kTileSize = kTileRows * kTileBytes;
constexpr int64_t kBlockRows = 2 * kTileRows;  // A0, A1
constexpr int64_t kBlockCols = 2 * kGemmNR;    // B0, B1

// Where the driver's results go: int32 accumulators (c), or, with `requantize`, requantized by it
// with `requant` into q.
struct GemmOutput {
  int32_t* c = nullptr;
  int64_t ldc = 0;
  const RequantParams* requant = nullptr;
  RequantizeKernel requantize = nullptr;
  uint8_t* q = nullptr;
  int64_t ldq = 0;
};

// An A tile's k tiles: tile t at base + offset[t], rows `stride` bytes apart.
struct ATile {
  const uint8_t* base;
  const int64_t* offset;
  int64_t stride;
};

// The B tiles of a block of 16 columns: tile t < full at base + t * kTileSize, the k tail at `tail`.
struct BTile {
  const int8_t* base;
  const int8_t* tail;
};

enum TileNumber : int { kC00, kC01, kC10, kC11, kA0, kA1, kB0, kB1 };

// One block: acc (32 x 32 int32, rows kBlockCols apart) = A rows x B columns over `full` whole k
// tiles and, with `tail`, the tail tile. kTwoRows / kTwoCols: the second A / B tile is used.
template <class Tiles, bool kTwoRows, bool kTwoCols>
void multiply_block(const ATile* a, const BTile* b, int64_t full, bool tail, int32_t* acc) {
  Tiles::template zero<kC00>();
  if (kTwoCols) Tiles::template zero<kC01>();
  if (kTwoRows) Tiles::template zero<kC10>();
  if (kTwoRows && kTwoCols) Tiles::template zero<kC11>();
  auto step = [&](int64_t t, const int8_t* b0, const int8_t* b1) {
    Tiles::template load<kA0>(a[0].base + a[0].offset[t], a[0].stride);
    Tiles::template load<kB0>(b0, kTileBytes);
    Tiles::template dpbusd<kC00, kA0, kB0>();
    if (kTwoCols) {
      Tiles::template load<kB1>(b1, kTileBytes);
      Tiles::template dpbusd<kC01, kA0, kB1>();
    }
    if (kTwoRows) {
      Tiles::template load<kA1>(a[1].base + a[1].offset[t], a[1].stride);
      Tiles::template dpbusd<kC10, kA1, kB0>();
      if (kTwoCols) Tiles::template dpbusd<kC11, kA1, kB1>();
    }
  };
  for (int64_t t = 0; t < full; ++t) step(t, b[0].base + t * kTileSize, kTwoCols ? b[1].base + t * kTileSize : nullptr);
  if (tail) step(full, b[0].tail, kTwoCols ? b[1].tail : nullptr);
  constexpr int64_t ld = kBlockCols * sizeof(int32_t);
  Tiles::template store<kC00>(acc, ld);
  if (kTwoCols) Tiles::template store<kC01>(acc + kGemmNR, ld);
  if (kTwoRows) Tiles::template store<kC10>(acc + kTileRows * kBlockCols, ld);
  if (kTwoRows && kTwoCols) Tiles::template store<kC11>(acc + kTileRows * kBlockCols + kGemmNR, ld);
}

template <class Tiles>
void multiply_block_any(bool two_rows, bool two_cols, const ATile* a, const BTile* b, int64_t full, bool tail,
                        int32_t* acc) {
  if (two_rows && two_cols) return multiply_block<Tiles, true, true>(a, b, full, tail, acc);
  if (two_rows) return multiply_block<Tiles, true, false>(a, b, full, tail, acc);
  if (two_cols) return multiply_block<Tiles, false, true>(a, b, full, tail, acc);
  multiply_block<Tiles, false, false>(a, b, full, tail, acc);
}

// Copies len bytes from src to k positions [k, k + len) of row r of a panel of k tiles (byte k of
// row r at panel + (k / 64) * kTileSize + r * 64 + k % 64).
inline void copy_into_tiles(const uint8_t* src, int64_t len, int64_t k, int r, uint8_t* panel) {
  while (len > 0) {
    const int64_t within = k % kTileBytes, n = std::min(kTileBytes - within, len);
    std::memcpy(panel + k / kTileBytes * kTileSize + r * kTileBytes + within, src, static_cast<size_t>(n));
    src += n, k += n, len -= n;
  }
}

// The A tile of rows [first, first + count) (count <= 16): read in place where it can be (see the top
// of this file; run_offset is null where run_len is not a multiple of 64), else packed into `panel`
// (tile t at packed_offset[t] = t * kTileSize). The panel's bytes past k and its rows past `count`
// keep what they held (bytes, from the zeroed scratch or an earlier call): those past k meet the zero
// rows of B's tail tile, the rows past count give C rows that are not written out.
template <class RowAt>
ATile a_tile(RowAt row, const U8RowRuns& a, int64_t first, int64_t count, const int64_t* run_offset,
             const int64_t* packed_offset, uint8_t* panel) {
  if (run_offset && count == kTileRows) {
    const auto at = [&](int r) { return reinterpret_cast<uintptr_t>(row(first + r)); };
    const int64_t stride = static_cast<int64_t>(at(1) - at(0));
    bool equally_spaced = true;
    for (int r = 2; r < kTileRows && equally_spaced; ++r) equally_spaced = static_cast<int64_t>(at(r) - at(0)) == r * stride;
    if (equally_spaced) return {row(first), run_offset, stride};
  }
  for (int64_t r = 0; r < count; ++r) {
    const uint8_t* src = row(first + r);
    for (int64_t s = 0; s < a.runs; ++s) copy_into_tiles(src + s * a.run_stride, a.run_len, s * a.run_len, r, panel);
  }
  return {panel, packed_offset, kTileBytes};
}

// Rows [i0, i0 + rows) and columns [j0, j0 + cols) of the results, from acc.
inline void write_out(const GemmOutput& out, const int32_t* acc, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  if (out.requantize) {
    out.requantize(acc, rows, cols, kBlockCols, out.requant->columns_from(j0), out.q + i0 * out.ldq + j0, out.ldq);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(out.c + (i0 + r) * out.ldc + j0, acc + r * kBlockCols, static_cast<size_t>(cols) * sizeof(int32_t));
  }
}

// The tiles are configured for the call and released after it (also on an exception): another
// library may configure them differently between two calls on this thread.
template <class Tiles>
struct ConfiguredTiles {
  ConfiguredTiles() { Tiles::configure(TileConfig::uniform(kTileRows, kTileBytes)); }
  ~ConfiguredTiles() { Tiles::release(); }
  ConfiguredTiles(const ConfiguredTiles&) = delete;
  ConfiguredTiles& operator=(const ConfiguredTiles&) = delete;
};

// The GEMM over rows row(0), ..., row(m - 1) of A, each `a.runs` runs (kernels.h, U8RowRuns), and B
// packed by pack_b_u8s8 for k = a.runs * a.run_len. The driver's buffers are thread scratch of slot 8
// (the runtime's slots hold the caller's operands).
template <class Tiles, class RowAt>
void gemm(RowAt row, const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, const GemmOutput& out) {
  if (m <= 0 || n <= 0) return;
  const int64_t kq = a.runs * a.run_len, full = kq / kTileBytes, ktiles = (kq + kTileBytes - 1) / kTileBytes;
  const bool tail = ktiles > full;
  const int64_t blocks = (n + kGemmNR - 1) / kGemmNR, block_stride = kq * kGemmNR;
  uint8_t* panel = thread_scratch<uint8_t, 8>(static_cast<size_t>(2 * ktiles * kTileSize));
  int32_t* acc = thread_scratch<int32_t, 8>(static_cast<size_t>(kBlockRows * kBlockCols));
  int64_t* offsets = thread_scratch<int64_t, 8>(static_cast<size_t>(2 * ktiles));
  int64_t* packed_offset = offsets;
  int64_t* run_offset = a.run_len % kTileBytes == 0 ? offsets + ktiles : nullptr;
  for (int64_t t = 0; t < ktiles; ++t) {
    packed_offset[t] = t * kTileSize;
    if (run_offset) run_offset[t] = t * kTileBytes / a.run_len * a.run_stride + t * kTileBytes % a.run_len;
  }
  // The k tail of each block of B, zero past k.
  int8_t* tails = tail ? thread_scratch<int8_t, 8>(static_cast<size_t>(blocks * kTileSize)) : nullptr;
  if (tail) {
    const int64_t tail_bytes = (kq - full * kTileBytes) * kGemmNR;  // k quads left x 64 bytes
    for (int64_t nb = 0; nb < blocks; ++nb) {
      std::memcpy(tails + nb * kTileSize, b_packed + nb * block_stride + full * kTileSize, static_cast<size_t>(tail_bytes));
      std::memset(tails + nb * kTileSize + tail_bytes, 0, static_cast<size_t>(kTileSize - tail_bytes));
    }
  }
  ConfiguredTiles<Tiles> configured;
  for (int64_t i0 = 0; i0 < m; i0 += kBlockRows) {
    const int64_t rows = std::min(kBlockRows, m - i0);
    const bool two_rows = rows > kTileRows;
    ATile at[2];
    at[0] = a_tile(row, a, i0, std::min<int64_t>(kTileRows, rows), run_offset, packed_offset, panel);
    if (two_rows) {
      at[1] = a_tile(row, a, i0 + kTileRows, rows - kTileRows, run_offset, packed_offset, panel + ktiles * kTileSize);
    }
    for (int64_t nb = 0; nb < blocks; nb += 2) {
      const bool two_cols = nb + 1 < blocks;
      BTile bt[2];
      for (int64_t h = 0; h < (two_cols ? 2 : 1); ++h) {
        bt[h] = {b_packed + (nb + h) * block_stride, tail ? tails + (nb + h) * kTileSize : nullptr};
      }
      multiply_block_any<Tiles>(two_rows, two_cols, at, bt, full, tail, acc);
      write_out(out, acc, i0, rows, nb * kGemmNR, std::min(kBlockCols, n - nb * kGemmNR));
    }
  }
}

// The three entry points of a kernel set (kernels.h) on the driver.
template <class Tiles>
struct GemmEntries {
  static void dense(const uint8_t* a, int64_t m, int64_t kq, const int8_t* b_packed, int64_t n, int32_t* c,
                    int64_t ldc) {
    GemmOutput out;
    out.c = c, out.ldc = ldc;
    gemm<Tiles>([a, kq](int64_t i) { return a + i * kq; }, U8RowRuns{nullptr, 1, kq, 0}, m, b_packed, n, out);
  }
  static void runs(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n, int32_t* c, int64_t ldc) {
    GemmOutput out;
    out.c = c, out.ldc = ldc;
    gemm<Tiles>([&a](int64_t i) { return a.rows[i]; }, a, m, b_packed, n, out);
  }
  static void runs_requantized(const U8RowRuns& a, int64_t m, const int8_t* b_packed, int64_t n,
                               const RequantParams& p, RequantizeKernel requantize, uint8_t* q, int64_t ldq) {
    GemmOutput out;
    out.requant = &p, out.requantize = requantize, out.q = q, out.ldq = ldq;
    gemm<Tiles>([&a](int64_t i) { return a.rows[i]; }, a, m, b_packed, n, out);
  }
};

}  // namespace qnnpy::amx
