// The software model of the AMX tiles (kernels/amx/tiles.h), in plain C++: the same operations on the
// calling thread's model registers, with the configuration and shape rules checked. Where the CPU
// would fault (#GP at ldtilecfg, #UD at a tile instruction) the model throws std::logic_error, so a
// driver that would fault on the instructions fails the twin tests on any CPU.
#pragma once

#include <cstdint>

#include "kernels/amx/tiles.h"

namespace qnnpy::amx {

namespace model {
void configure(const TileConfig& c);
void release();
void zero(int t);
void load(int t, const void* base, int64_t stride);
void store(int t, void* base, int64_t stride);
void dpbusd(int c, int a, int b);
}  // namespace model

struct ModelTiles {
  static void configure(const TileConfig& c) { model::configure(c); }
  static void release() { model::release(); }
  template <int T>
  static void zero() {
    model::zero(T);
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    model::load(T, base, stride);
  }
  template <int T>
  static void store(void* base, int64_t stride) {
    model::store(T, base, stride);
  }
  template <int C, int A, int B>
  static void dpbusd() {
    model::dpbusd(C, A, B);
  }
};

}  // namespace qnnpy::amx
