// The loop is written in assembly, as the other peak loops: tdpbusd into four tiles (tmm0-tmm3) from
// the same A and B tiles (tmm4, tmm6), loaded once; the four accumulations are independent, so the
// loop measures the instruction's throughput, not its latency.
#include "kernels/amx/peak.h"

#include "kernels/amx/tile_instructions.h"
#include "kernels/kernels.h"
#include "kernels/peak_rate.h"

namespace qnnpy {
namespace {

void amx_loop(long n) {
  __asm__ volatile(
      "1:\n\t"
      "tdpbusd %%tmm6, %%tmm4, %%tmm0\n\t"
      "tdpbusd %%tmm6, %%tmm4, %%tmm1\n\t"
      "tdpbusd %%tmm6, %%tmm4, %%tmm2\n\t"
      "tdpbusd %%tmm6, %%tmm4, %%tmm3\n\t"
      "dec %0\n\tjnz 1b"
      : "+r"(n)
      :
      : "cc");
}

}  // namespace

double peak_amx_gmacs(double seconds) {
  if (!cpu_has_amx()) return 0.0;
  alignas(64) uint8_t bytes[amx::kMaxRows * amx::kMaxRowBytes];
  for (int i = 0; i < amx::kMaxRows * amx::kMaxRowBytes; ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 1);
  using Tiles = amx::InstructionTiles;
  Tiles::configure(amx::TileConfig::uniform(amx::kMaxRows, amx::kMaxRowBytes));
  Tiles::load<4>(bytes, amx::kMaxRowBytes);
  Tiles::load<6>(bytes, amx::kMaxRowBytes);
  const double gmacs = fastest_block_gmacs(amx_loop, 4.0 * amx::kMaxRows * amx::kMaxRows * amx::kMaxRowBytes, seconds);
  Tiles::release();
  return gmacs;
}

}  // namespace qnnpy
