#include "ops/affine_weight.h"

namespace qnnpy {

const Param& check_affine_weight(const Checker& c) {
  const Param& w = c.param("weight");
  if (w.dtype != DType::Int8 || w.shape.size() != 2 || !w.q.empty()) {
    c.fail("weight must be int8 (rows, columns) without qparams of its own, got " + std::string(dtype_name(w.dtype)) + " " +
           shape_str(w.shape));
  }
  const int64_t rows = w.shape[0], cols = w.shape[1];
  const int64_t group = c.n.int_attr("group_size");
  if (group < 1 || cols % group != 0) {
    c.fail("group_size " + std::to_string(group) + " does not divide the " + std::to_string(cols) + " columns");
  }
  const int64_t groups = rows * (cols / group);
  const Param& scale = c.param("weight_scale");
  if (scale.dtype != DType::Float32 || scale.shape != Shape{groups}) {
    c.fail("weight_scale must be float32 " + shape_str({groups}) + ", got " + dtype_name(scale.dtype) + " " + shape_str(scale.shape));
  }
  for (int64_t i = 0; i < groups; ++i) {
    if (!(scale.data<float>()[i] > 0.0f)) c.fail("weight_scale[" + std::to_string(i) + "] is not positive");
  }
  const Param& zp = c.param("weight_zero_point");
  if (zp.dtype != DType::Int8 || zp.shape != Shape{groups}) {
    c.fail("weight_zero_point must be int8 " + shape_str({groups}) + ", got " + dtype_name(zp.dtype) + " " + shape_str(zp.shape));
  }
  if (c.n.has_param("weight_offset")) {
    const Param& offset = c.param("weight_offset");
    if (offset.dtype != DType::Float32 || offset.shape != Shape{groups}) {
      c.fail("weight_offset must be float32 " + shape_str({groups}) + ", got " + dtype_name(offset.dtype) + " " +
             shape_str(offset.shape));
    }
  }
  const int64_t bits = c.n.int_attr("weight_bits");
  if (bits < 1 || bits > 8) c.fail("weight_bits must be in [1, 8], got " + std::to_string(bits));
  const int64_t lo = -(int64_t{1} << (bits - 1)), hi = (int64_t{1} << (bits - 1)) - 1;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const int64_t v = w.data<int8_t>()[i];
    if (v < lo || v > hi) c.fail("weight value " + std::to_string(v) + " is outside the int" + std::to_string(bits) + " range");
  }
  return w;
}

std::string emit_affine_weight(Emitter& e, const Node& n) {
  const Graph& g = e.graph();
  const std::string& o = e.out_name(n);
  const Param& w = g.node_param(n, "weight");
  const int64_t rows = w.shape[0], cols = w.shape[1], group = n.int_attr("group_size");
  const std::string groups = e.emit(o + "_w_groups", "R.reshape(" + w.name + ", R.shape([" + std::to_string(rows * cols / group) +
                                                         ", " + std::to_string(group) + "]))");
  std::string wd = e.emit(o + "_w_groups_float", "R.dequantize(" + groups + ", " + g.node_param(n, "weight_scale").name + ", " +
                                                     g.node_param(n, "weight_zero_point").name + ", axis=0, out_dtype=\"float32\")");
  if (n.has_param("weight_offset")) {
    wd = e.emit(o + "_w_groups_shifted", "R.add(" + wd + ", R.reshape(" + g.node_param(n, "weight_offset").name +
                                             ", R.shape([" + std::to_string(rows * cols / group) + ", 1])))");
  }
  return e.emit(o + "_w", "R.reshape(" + wd + ", R.shape([" + std::to_string(rows) + ", " + std::to_string(cols) + "]))");
}

}  // namespace qnnpy
