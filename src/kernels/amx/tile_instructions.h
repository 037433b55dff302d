// The AMX tiles (kernels/amx/tiles.h) as the instructions, for translation units built with
// -mamx-tile -mamx-int8 that run only after kernels/dispatch.cpp found AMX and Linux granted the
// tile data state. Inline assembly rather than the _tile_* intrinsics: GCC's paste the tile number
// into the instruction text (#dst), so they take literal numbers, not template arguments. Each
// statement is volatile and clobbers memory, so the compiler keeps the order of the tile operations
// and of the loads and stores of the memory they read and write.
#pragma once

#include <cstdint>

#include "kernels/amx/tiles.h"

namespace qnnpy::amx {

struct InstructionTiles {
  static void configure(const TileConfig& c) { __asm__ volatile("ldtilecfg %0" : : "m"(c) : "memory"); }
  static void release() { __asm__ volatile("tilerelease" : : : "memory"); }
  template <int T>
  static void zero() {
    __asm__ volatile("tilezero %%tmm%c0" : : "n"(T) : "memory");
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(base), "r"(stride), "n"(T) : "memory");
  }
  template <int T>
  static void store(void* base, int64_t stride) {
    __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(base), "r"(stride), "n"(T) : "memory");
  }
  // AT&T order: tdpbusd B, A, C.
  template <int C, int A, int B>
  static void dpbusd() {
    __asm__ volatile("tdpbusd %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "n"(C), "n"(A), "n"(B) : "memory");
  }
};

}  // namespace qnnpy::amx
