// One tdpbusd on tiles of a given shape (amx_kernels.h, tile_dpbusd_*), written once against the tile
// interface: the tests compare the instructions and the model with the formula of kernels/amx/tiles.h
// on shapes the GEMM driver does not use (rows, k and columns below 16).
#pragma once

#include <cstdint>

#include "kernels/amx/tiles.h"

namespace qnnpy::amx {

template <class Tiles>
void tile_product(int rows, int k_quads, int cols, const uint8_t* a, const int8_t* b, int32_t* c) {
  TileConfig config;
  config.rows[0] = static_cast<uint8_t>(rows), config.colsb[0] = static_cast<uint16_t>(4 * cols);     // C
  config.rows[1] = static_cast<uint8_t>(rows), config.colsb[1] = static_cast<uint16_t>(4 * k_quads);  // A
  config.rows[2] = static_cast<uint8_t>(k_quads), config.colsb[2] = static_cast<uint16_t>(4 * cols);  // B
  Tiles::configure(config);
  Tiles::template load<0>(c, 4 * cols);
  Tiles::template load<1>(a, 4 * k_quads);
  Tiles::template load<2>(b, 4 * cols);
  Tiles::template dpbusd<0, 1, 2>();
  Tiles::template store<0>(c, 4 * cols);
  Tiles::release();
}

}  // namespace qnnpy::amx
