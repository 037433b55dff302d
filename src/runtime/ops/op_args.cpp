#include "runtime/ops/op_args.h"

#include <stdexcept>

namespace qnnpy {

void OpArgs::fail(const std::string& msg) const {
  throw std::invalid_argument("runtime: " + node.op + " (" + node.source + "): " + msg);
}

Pool2dShape pool_shape(const OpArgs& a) {
  const Shape &x = a.in().shape, &y = a.out().shape;
  return {x[0], x[2], x[3], x[1], y[2], y[3], 1, 1, 1, 1, 0, 0, 1, 1};
}

}  // namespace qnnpy
