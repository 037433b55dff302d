// The tile interface of the amx kernels: what the GEMM driver (kernels/amx/gemm_driver.h) asks of
// Intel AMX, so that one driver runs on the instructions (kernels/amx/tile_instructions.h) and on a
// software model of them (kernels/amx/tile_model.h), which any x86-64 CPU runs in the twin tests.
//
// A Tiles implementation is a class of static functions acting on the calling thread's eight tile
// registers; tile numbers are template arguments (the instructions encode them):
//   configure(const TileConfig&)   ldtilecfg: palette 1 and each tile's shape; every tile becomes 0
//   release()                      tilerelease: back to the initial (unconfigured) state
//   zero<T>()                      tilezero
//   load<T>(base, stride)          tileloadd: row r (< rows) from base + r * stride, colsb bytes;
//                                  the rest of the tile becomes 0
//   store<T>(base, stride)         tilestored: rows x colsb bytes to base + r * stride
//   dpbusd<C, A, B>()              tdpbusd: C[m][n] += sum over k < colsb(A) of
//                                  A[m][k] * B[k / 4][4 n + k % 4], A bytes uint8, B bytes int8, C int32,
//                                  exact (wrapping int32 adds of exact products)
// The semantics are the Intel SDM's, as a test program checked them on an Emerald Rapids Xeon (issue 31;
// qnnpy's own AMX code has not yet run on one); the shape rules are those of the SDM's exception class
// AMX-E4 (the model checks them, the CPU raises #UD).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qnnpy::amx {

constexpr int kTiles = 8;
constexpr int kMaxRows = 16;      // palette 1
constexpr int kMaxRowBytes = 64;  // palette 1

// The 64-byte operand of ldtilecfg (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved0[14] = {};
  uint16_t colsb[kTiles] = {};  // bytes per row of each tile
  uint8_t reserved1[16] = {};
  uint8_t rows[kTiles] = {};
  uint8_t reserved2[8] = {};

  // Every tile `rows` x `colsb`.
  static TileConfig uniform(int rows, int colsb) {
    TileConfig c;
    for (int t = 0; t < kTiles; ++t) c.rows[t] = static_cast<uint8_t>(rows), c.colsb[t] = static_cast<uint16_t>(colsb);
    return c;
  }
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");
static_assert(offsetof(TileConfig, colsb) == 16 && offsetof(TileConfig, rows) == 48, "the SDM's TILECFG layout");

}  // namespace qnnpy::amx
