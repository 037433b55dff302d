#include <map>
#include <stdexcept>

#include "runtime/ops/runners.h"

namespace qnnpy {

void OpArgs::fail(const std::string& msg) const {
  throw std::invalid_argument("runtime: " + node.op + " (" + node.source + "): " + msg);
}

const OpRunner* find_op_runner(const std::string& op) {
  static const std::map<std::string, OpRunner> table = {
      {"quantize", run_quantize},
      {"dequantize", run_dequantize},
      {"add", run_add},
      {"relu", run_relu},
      {"max_pool2d", run_max_pool2d},
      {"adaptive_avg_pool2d", run_adaptive_avg_pool2d},
      {"reshape", run_reshape},
      {"mul", run_mul},
      {"hardswish", run_unary},
      {"hardsigmoid", run_unary},
      {"sigmoid", run_unary},
      {"leaky_relu", run_unary},
      {"clamp", run_unary},
      {"add_scalar", run_unary},
      {"mul_scalar", run_unary},
      {"cat", run_cat},
      {"batch_norm2d", run_batch_norm2d},
      {"avg_pool2d", run_avg_pool2d},
      {"mean", run_mean},
      {"permute", run_permute},
      {"slice", run_slice},
      {"upsample_nearest2d", run_upsample_nearest2d},
  };
  auto it = table.find(op);
  return it == table.end() ? nullptr : &it->second;
}

Pool2dShape pool_shape(const OpArgs& a) {
  const Shape &x = a.in().shape, &y = a.out().shape;
  return {x[0], x[2], x[3], x[1], y[2], y[3], 1, 1, 1, 1, 0, 0, 1, 1};
}

}  // namespace qnnpy
