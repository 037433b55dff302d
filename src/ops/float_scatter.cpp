// Float ops that write values at computed positions, or order them (runners:
// src/runtime/ops/float_scatter.cpp). Any plain dtype for the data; integer indices.
//
// float_scatter     "axis", "reduce" (0 replace, 1 sum, 2 prod,     R.scatter_elements
//                   3 mean, 4 amax, 5 amin), "include_self" (0/1);
//                   inputs x, index (x's rank), src (index's shape at
//                   least): torch.scatter / scatter_add / scatter_reduce
// float_index_put   "axes" (consecutive), "accumulate" (0/1);        R.scatter_elements on
//                   inputs x, values, then one integer index tensor   the indexed axes merged
//                   per axis, broadcast together: x[..., i, j, ...] = values
// float_topk        "axis", "k", "largest" (0/1), "indices" (0: the   R.topk
//                   values, 1: their int64 positions): torch.topk and
//                   torch.sort (k = the axis' size); equal values keep their order
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/float_scatter_runners.h"

namespace qnnpy {
namespace {

Shape scatter_rule(const Checker& c, const Value& out) {
  c.inputs(3);
  const Value &x = c.in(0), &index = c.in(1), &src = c.in(2);
  c.dtype(out, x.dtype);
  c.dtype(src, x.dtype);
  c.indices(index);
  if (x.shape.empty() || index.shape.size() != x.shape.size() || src.shape.size() != x.shape.size()) {
    c.fail("input, index and src must have one rank, got " + shape_str(x.shape) + ", " + shape_str(index.shape) + ", " +
           shape_str(src.shape));
  }
  const int64_t axis = c.axis("axis", x.shape.size());
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (index.shape[d] > src.shape[d] || (static_cast<int64_t>(d) != axis && index.shape[d] > x.shape[d])) {
      c.fail("index " + shape_str(index.shape) + " exceeds src " + shape_str(src.shape) + " or input " + shape_str(x.shape));
    }
  }
  const int64_t reduce = c.n.int_attr("reduce"), include_self = c.n.int_attr("include_self");
  if (reduce < 0 || reduce > 5) c.fail("reduce must be in [0, 5], got " + std::to_string(reduce));
  if (include_self != 0 && include_self != 1) c.fail("include_self must be 0 or 1");
  if (reduce == 3 && x.dtype != DType::Float32) c.fail("a mean scatter takes float32 values");
  return x.shape;
}

Shape index_put_rule(const Checker& c, const Value& out) {
  if (c.n.inputs.size() < 3) c.fail("expects an input, the values and at least one index tensor");
  const Value& x = c.in(0);
  c.dtype(out, x.dtype);
  c.dtype(c.in(1), x.dtype);
  const std::vector<int64_t> axes = c.axes("axes", x.shape.size());
  if (axes.size() != c.n.inputs.size() - 2) c.fail("axes names " + std::to_string(axes.size()) + " axes for " +
                                                   std::to_string(c.n.inputs.size() - 2) + " index tensors");
  Shape indexed = c.in(2).shape;
  for (size_t j = 0; j < axes.size(); ++j) {
    c.indices(c.in(j + 2));
    if (j && axes[j] != axes[j - 1] + 1) c.fail("the indexed axes must be consecutive and ascending");
    indexed = c.broadcast(indexed, c.in(j + 2).shape);
  }
  Shape target(x.shape.begin(), x.shape.begin() + axes.front());
  target.insert(target.end(), indexed.begin(), indexed.end());
  target.insert(target.end(), x.shape.begin() + axes.back() + 1, x.shape.end());
  if (c.broadcast(c.in(1).shape, target) != target) {
    c.fail("values " + shape_str(c.in(1).shape) + " do not broadcast to the indexed shape " + shape_str(target));
  }
  const int64_t accumulate = c.n.int_attr("accumulate");
  if (accumulate != 0 && accumulate != 1) c.fail("accumulate must be 0 or 1");
  return x.shape;
}

Shape topk_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  const Value& x = c.in(0);
  c.numeric(x);
  c.dtype(out, c.n.int_attr("indices") ? DType::Int64 : x.dtype);
  if (x.shape.empty()) c.fail("input must have at least one axis");
  const int64_t axis = c.axis("axis", x.shape.size()), k = c.n.int_attr("k");
  if (k < 1 || k > x.shape[axis]) c.fail("k must be in [1, " + std::to_string(x.shape[axis]) + "], got " + std::to_string(k));
  c.n.int_attr("largest");
  Shape s = x.shape;
  s[axis] = k;
  return s;
}

// --- emission -------------------------------------------------------------------

const char* const kReductions[] = {"update", "add", "mul", "", "max", "min"};

// A scatter without the input's own values (include_self 0): the scattered positions first set to the
// reduction's identity, then reduced into.
void scatter_emit(Emitter& e, const Node& n) {
  const int64_t reduce = n.int_attr("reduce");
  std::string x = e.in_name(n, 0), src = e.in_name(n, 2);
  const std::string& index = e.in_name(n, 1);
  const Shape &index_shape = e.graph().value(n.inputs[1]).shape, &src_shape = e.graph().value(n.inputs[2]).shape;
  if (src_shape != index_shape) {  // torch reads src's leading part; scatter_elements takes updates of the index's shape
    std::vector<int64_t> axes, zeros;
    for (size_t d = 0; d < index_shape.size(); ++d) axes.push_back(static_cast<int64_t>(d)), zeros.push_back(0);
    src = e.emit(e.out_name(n) + "_src", "R.strided_slice(" + src + ", axes=" + int_list(axes) + ", begin=" + int_list(zeros) +
                                             ", end=" + int_list(index_shape) + ")");
  }
  const std::string axis = std::to_string(n.int_attr("axis"));
  if (reduce && !n.int_attr("include_self")) {
    const DType dtype = e.graph().value(n.inputs[0]).dtype;
    std::string fill;
    if (dtype == DType::Float32) {
      fill = scalar_const(reduce == 2 ? 1.0 : reduce == 4 ? -HUGE_VAL : reduce == 5 ? HUGE_VAL : 0.0, DType::Float32);
    } else {
      const int64_t identity = reduce == 2 ? 1 : reduce == 4 ? std::numeric_limits<int64_t>::min()
                                               : reduce == 5 ? std::numeric_limits<int64_t>::max() : 0;
      fill = "R.const(" + std::to_string(identity) + ", \"" + dtype_name(dtype) + "\")";
    }
    x = e.emit(e.out_name(n) + "_cleared", "R.scatter_elements(" + x + ", " + index + ", R.add(R.zeros_like(" + src + "), " +
                                              fill + "), axis=" + axis + ")");
  }
  if (reduce == 3) {  // the sum over the count of values summed (TVM's own mean reduction averages in pairs)
    const std::string sum = e.emit(e.out_name(n) + "_sum", "R.scatter_elements(" + x + ", " + index + ", " + src + ", axis=" +
                                                               axis + ", reduction=\"add\")");
    const std::string count = e.emit(e.out_name(n) + "_count", "R.scatter_elements(R.ones_like(" + x + "), " + index +
                                                                   ", R.ones_like(" + src + "), axis=" + axis + ", reduction=\"add\")");
    return e.line(e.out_name(n), call("R.divide", sum, count));
  }
  e.line(e.out_name(n), "R.scatter_elements(" + x + ", " + index + ", " + src + ", axis=" + axis + ", reduction=\"" +
                            kReductions[reduce] + "\")");
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i + a.size() >= out.size() ? a[i + a.size() - out.size()] : 1;
    const int64_t db = i + b.size() >= out.size() ? b[i + b.size() - out.size()] : 1;
    out[i] = std::max(da, db);
  }
  return out;
}

// x viewed with its indexed axes merged into one, (outer..., extent, inner...); the linear position in that
// axis of every element of the broadcast index tensors; the values spread over the same view; one
// scatter_elements along the merged axis, viewed back.
void index_put_emit(Emitter& e, const Node& n) {
  const Graph& g = e.graph();
  const Shape& x = g.value(n.inputs[0]).shape;
  std::vector<int64_t> axes = n.ints_attr("axes");
  for (int64_t& a : axes) a += a < 0 ? static_cast<int64_t>(x.size()) : 0;
  const auto lead = static_cast<size_t>(axes.front()), tail = static_cast<size_t>(axes.back() + 1);
  const std::string& o = e.out_name(n);
  Shape index_shape;
  for (size_t j = 2; j < n.inputs.size(); ++j) index_shape = broadcast_shapes(index_shape, g.value(n.inputs[j]).shape);
  int64_t extent = 1, count = num_elements(index_shape);
  for (int64_t a : axes) extent *= x[a];
  auto around = [&](const Shape& middle) {
    Shape s(x.begin(), x.begin() + lead);
    s.insert(s.end(), middle.begin(), middle.end());
    s.insert(s.end(), x.begin() + tail, x.end());
    return s;
  };
  std::string linear;
  int64_t stride = extent;
  for (size_t j = 0; j < axes.size(); ++j) {
    stride /= x[axes[j]];
    const Value& index = g.value(n.inputs[j + 2]);
    const std::string t = dtype_name(index.dtype);
    const std::string wrapped = "R.where(R.less(" + index.name + ", R.const(0, \"" + t + "\")), R.add(" + index.name +
                                ", R.const(" + std::to_string(x[axes[j]]) + ", \"" + t + "\")), " + index.name + ")";
    const std::string term = "R.astype(R.multiply(" + wrapped + ", R.const(" + std::to_string(stride) + ", \"" + t + "\")), \"int64\")";
    linear = linear.empty() ? term : "R.add(" + linear + ", " + term + ")";
  }
  const Shape flat = around({count});
  Shape column(flat.size(), 1);
  column[lead] = count;
  const std::string positions = e.emit(o + "_positions", "R.broadcast_to(R.reshape(R.broadcast_to(" + linear + ", " +
                                                             e.shape_expr(index_shape) + "), " + e.shape_expr(column) + "), " +
                                                             e.shape_expr(flat) + ")");
  const std::string updates = e.emit(o + "_updates", "R.reshape(R.broadcast_to(" + e.in_name(n, 1) + ", " +
                                                         e.shape_expr(around(index_shape)) + "), " + e.shape_expr(flat) + ")");
  const std::string data = e.emit(o + "_merged", "R.reshape(" + e.in_name(n, 0) + ", " + e.shape_expr(around({extent})) + ")");
  const std::string put = e.emit(o + "_put", "R.scatter_elements(" + data + ", " + positions + ", " + updates + ", axis=" +
                                                 std::to_string(lead) + ", reduction=\"" +
                                                 (n.int_attr("accumulate") ? "add" : "update") + "\")");
  e.line(o, "R.reshape(" + put + ", " + e.shape_expr(x) + ")");
}

void topk_emit(Emitter& e, const Node& n) {
  const bool indices = n.int_attr("indices") != 0;
  e.line(e.out_name(n), "R.topk(" + e.in_name(n, 0) + ", k=" + std::to_string(n.int_attr("k")) + ", axis=" +
                            std::to_string(n.int_attr("axis")) + ", ret_type=\"" + (indices ? "indices" : "values") +
                            "\", largest=" + (n.int_attr("largest") ? "True" : "False") + ", dtype=\"int64\")");
}

}  // namespace

std::vector<OpDef> float_scatter_ops() {
  std::vector<OpDef> defs = {
      {"float_scatter", OpKind::Float, scatter_rule, scatter_emit, function_runner<run_float_scatter>},
      {"float_index_put", OpKind::Float, index_put_rule, index_put_emit, function_runner<run_float_index_put>},
      {"float_topk", OpKind::Float, topk_rule, topk_emit, function_runner<run_float_topk>},
  };
  for (OpDef& def : defs) def.any_dtype = true;
  return defs;
}

}  // namespace qnnpy
