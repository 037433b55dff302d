// The software model of the AMX tiles. Semantics from the Intel SDM's pseudo-code of LDTILECFG,
// TILELOADD, TILESTORED, TILEZERO, TILERELEASE and TDPBUSD (palette 1: 8 tiles of up to 16 rows of
// 64 bytes), with the shape rules of its exception class AMX-E4.
#include "kernels/amx/tile_model.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace qnnpy::amx::model {
namespace {

struct Registers {
  bool configured = false;
  TileConfig config;
  uint8_t data[kTiles][kMaxRows][kMaxRowBytes] = {};
};

thread_local Registers regs;

[[noreturn]] void fault(const std::string& why) { throw std::logic_error("AMX tile model: " + why); }

int rows(int t) { return regs.config.rows[t]; }
int colsb(int t) { return regs.config.colsb[t]; }

// A tile instruction's operand: configured, and a tile the configuration uses.
void check_operand(int t, const char* instruction) {
  if (!regs.configured) fault(std::string(instruction) + " before ldtilecfg (#UD)");
  if (t < 0 || t >= kTiles) fault(std::string(instruction) + ": no tile " + std::to_string(t));
  if (rows(t) == 0 || colsb(t) == 0) fault(std::string(instruction) + ": tile " + std::to_string(t) + " is not configured (#UD)");
}

int32_t dword(int t, int r, int n) {
  int32_t v;
  std::memcpy(&v, &regs.data[t][r][4 * n], 4);
  return v;
}

}  // namespace

void configure(const TileConfig& c) {
  if (c.palette != 1) fault("palette " + std::to_string(c.palette) + " (only palette 1 is modelled)");
  if (c.start_row != 0) fault("start_row must be 0 outside a restarted instruction");
  for (int t = 0; t < kTiles; ++t) {
    if (c.rows[t] > kMaxRows || c.colsb[t] > kMaxRowBytes) fault("tile " + std::to_string(t) + " larger than 16 x 64 (#GP)");
    if ((c.rows[t] == 0) != (c.colsb[t] == 0)) fault("tile " + std::to_string(t) + ": rows and colsb must be both 0 or neither (#GP)");
  }
  regs.config = c;
  regs.configured = true;
  std::memset(regs.data, 0, sizeof regs.data);
}

void release() {
  regs.configured = false;
  regs.config = TileConfig{};
  std::memset(regs.data, 0, sizeof regs.data);
}

void zero(int t) {
  check_operand(t, "tilezero");
  std::memset(regs.data[t], 0, sizeof regs.data[t]);
}

void load(int t, const void* base, int64_t stride) {
  check_operand(t, "tileloadd");
  std::memset(regs.data[t], 0, sizeof regs.data[t]);
  for (int r = 0; r < rows(t); ++r) std::memcpy(regs.data[t][r], static_cast<const uint8_t*>(base) + r * stride, colsb(t));
}

void store(int t, void* base, int64_t stride) {
  check_operand(t, "tilestored");
  for (int r = 0; r < rows(t); ++r) std::memcpy(static_cast<uint8_t*>(base) + r * stride, regs.data[t][r], colsb(t));
}

void dpbusd(int c, int a, int b) {
  check_operand(c, "tdpbusd");
  check_operand(a, "tdpbusd");
  check_operand(b, "tdpbusd");
  if (c == a || c == b || a == b) fault("tdpbusd: the three tiles must differ (#UD)");
  if (colsb(c) % 4 != 0 || colsb(a) % 4 != 0) fault("tdpbusd: colsb of C and A must be multiples of 4 (#UD)");
  if (rows(c) != rows(a)) fault("tdpbusd: C and A must have as many rows (#UD)");
  if (colsb(a) != 4 * rows(b)) fault("tdpbusd: A's colsb must be 4 times B's rows (#UD)");
  if (colsb(c) != colsb(b)) fault("tdpbusd: C and B must have as many bytes per row (#UD)");
  uint32_t result[kMaxRows][kMaxRowBytes / 4] = {};
  for (int m = 0; m < rows(c); ++m) {
    for (int n = 0; n < colsb(c) / 4; ++n) result[m][n] = static_cast<uint32_t>(dword(c, m, n));
    for (int q = 0; q < rows(b); ++q) {
      const uint8_t* x = &regs.data[a][m][4 * q];
      const int8_t* w = reinterpret_cast<const int8_t*>(regs.data[b][q]);
      for (int n = 0; n < colsb(c) / 4; ++n) {
        // One quad's four products: at most 4 * 255 * 128 in magnitude, exact in int32; the sums over
        // quads wrap (no saturation), in uint32 so that the wrap is defined.
        const int32_t quad = x[0] * w[4 * n] + x[1] * w[4 * n + 1] + x[2] * w[4 * n + 2] + x[3] * w[4 * n + 3];
        result[m][n] += static_cast<uint32_t>(quad);
      }
    }
  }
  // The rows past C's and the bytes past its colsb become 0.
  std::memset(regs.data[c], 0, sizeof regs.data[c]);
  for (int m = 0; m < rows(c); ++m) std::memcpy(regs.data[c][m], result[m], colsb(c));
}

}  // namespace qnnpy::amx::model
