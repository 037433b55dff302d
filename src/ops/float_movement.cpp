// Float ops that move or select values, any plain dtype (float32, int64, int32, bool), the
// output of the input's dtype (runners: src/runtime/ops/float_movement.cpp).
//
// float_reshape   "shape"                                   R.reshape
// float_permute   "perm"                                    R.permute_dims
// float_cat       "axis"; inputs of one dtype               R.concat
// float_slice     "axis", "begin", "end", "step" (optional,  R.strided_slice
//                 1 when absent); begin < end in the axis
// float_expand    "shape": the input broadcast to it        R.broadcast_to
// float_flip      "axes"                                    R.flip, one per axis
// float_pad       "pads" (before, after for every axis),    R.nn.pad (constant); R.take of
//                 "mode" 0 constant 1 reflect 2 replicate    the source indices (others)
//                 3 circular; "value" (float, constant mode)
// float_repeat    "repeats" (rank >= the input's)           R.tile
// float_take      "axis"; input, integer indices of any     R.take (wrap)
//                 shape: x.shape[:axis] + indices.shape + x.shape[axis+1:]; negative
//                 indices count from the end; out of range: an error at run time
// float_gather    "axis"; input, integer indices of its     R.gather_elements
//                 rank (torch.gather)
// float_index     "axes": consecutive axes of the input,    reshape + R.take of the
//                 one integer index tensor each, broadcast   linear index
//                 together (advanced indexing, torch's x[..., i, j, ...])
#include <algorithm>
#include <string>

#include "emit/emitter.h"
#include "ops/op_def.h"
#include "runtime/ops/float_movement_runners.h"

namespace qnnpy {
namespace {

// The output keeps the dtype of input 0.
void same_dtype_out(const Checker& c, const Value& out) { c.dtype(out, c.in(0).dtype); }

Shape reshape_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  same_dtype_out(c, out);
  const auto& shape = c.n.ints_attr("shape");
  const Shape s(shape.begin(), shape.end());
  if (checked_num_elements(s, c.n.op + " (" + c.n.source + "): attribute 'shape'") != num_elements(c.in(0).shape)) {
    c.fail("cannot reshape " + shape_str(c.in(0).shape) + " to " + shape_str(s));
  }
  return s;
}

Shape permute_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  same_dtype_out(c, out);
  const Shape& x = c.in(0).shape;
  const std::vector<int64_t> perm = c.axes("perm", x.size());
  if (perm.size() != x.size()) c.fail("perm has " + std::to_string(perm.size()) + " axes for input shape " + shape_str(x));
  Shape s;
  for (int64_t p : perm) s.push_back(x[p]);
  return s;
}

Shape cat_rule(const Checker& c, const Value& out) {
  c.dtype(out, c.same_dtype());
  return concat_shape(c);
}

int64_t slice_step(const Node& n) { return n.ints.count("step") ? n.int_attr("step") : 1; }

Shape slice_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  same_dtype_out(c, out);
  Shape s = c.in(0).shape;
  if (s.empty()) c.fail("input must have at least one axis");
  const int64_t axis = c.axis("axis", s.size());
  const int64_t begin = c.n.int_attr("begin"), end = c.n.int_attr("end"), step = slice_step(c.n);
  if (begin < 0 || end > s[axis] || begin >= end) {
    c.fail("range [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside axis of size " + std::to_string(s[axis]));
  }
  if (step < 1) c.fail("step must be >= 1, got " + std::to_string(step));
  s[axis] = (end - begin + step - 1) / step;
  return s;
}

Shape expand_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  same_dtype_out(c, out);
  const Shape& x = c.in(0).shape;
  const auto& target = c.n.ints_attr("shape");
  const Shape s(target.begin(), target.end());
  checked_num_elements(s, c.n.op + " (" + c.n.source + "): attribute 'shape'");
  if (s.size() < x.size()) c.fail("cannot expand " + shape_str(x) + " to the lower rank of " + shape_str(s));
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t to = s[s.size() - x.size() + d];
    if (x[d] != 1 && x[d] != to) c.fail("cannot expand " + shape_str(x) + " to " + shape_str(s));
  }
  return s;
}

Shape flip_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  same_dtype_out(c, out);
  c.axes("axes", c.in(0).shape.size());
  return c.in(0).shape;
}

Shape pad_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  same_dtype_out(c, out);
  const Shape& x = c.in(0).shape;
  const auto& pads = c.n.ints_attr("pads");
  if (pads.size() != 2 * x.size()) c.fail("pads needs before and after for each of the " + std::to_string(x.size()) + " axes");
  c.non_negative(pads, "pads");
  const int64_t mode = c.n.int_attr("mode");
  if (mode < 0 || mode > 3) c.fail("mode must be 0 (constant), 1 (reflect), 2 (replicate) or 3 (circular), got " + std::to_string(mode));
  c.n.float_attr("value");
  Shape s = x;
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t before = pads[2 * d], after = pads[2 * d + 1];
    if ((mode == 1 && (before >= x[d] || after >= x[d])) || (mode == 3 && (before > x[d] || after > x[d]))) {
      c.fail("padding of " + std::to_string(std::max(before, after)) + " too large for axis " + std::to_string(d) +
             " of size " + std::to_string(x[d]) + " in this mode");
    }
    s[d] += before + after;
  }
  return s;
}

Shape repeat_rule(const Checker& c, const Value& out) {
  c.inputs(1);
  same_dtype_out(c, out);
  const Shape& x = c.in(0).shape;
  const auto& repeats = c.n.ints_attr("repeats");
  if (repeats.size() < x.size()) c.fail("repeats has fewer entries than the input's rank " + std::to_string(x.size()));
  c.positive(repeats, "repeats");
  Shape s(repeats.begin(), repeats.end());
  for (size_t d = 0; d < x.size(); ++d) s[s.size() - x.size() + d] *= x[d];
  return s;
}

Shape take_rule(const Checker& c, const Value& out) {
  c.inputs(2);
  same_dtype_out(c, out);
  c.indices(c.in(1));
  const Shape& x = c.in(0).shape;
  if (x.empty()) c.fail("input must have at least one axis");
  const int64_t axis = c.axis("axis", x.size());
  Shape s(x.begin(), x.begin() + axis);
  s.insert(s.end(), c.in(1).shape.begin(), c.in(1).shape.end());
  s.insert(s.end(), x.begin() + axis + 1, x.end());
  return s;
}

Shape gather_rule(const Checker& c, const Value& out) {
  c.inputs(2);
  same_dtype_out(c, out);
  c.indices(c.in(1));
  const Shape &x = c.in(0).shape, &index = c.in(1).shape;
  if (x.size() != index.size() || x.empty()) c.fail("indices " + shape_str(index) + " must have the input's rank " + shape_str(x));
  const int64_t axis = c.axis("axis", x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    if (static_cast<int64_t>(d) != axis && index[d] > x[d]) c.fail("indices " + shape_str(index) + " exceed input " + shape_str(x));
  }
  return index;
}

Shape index_rule(const Checker& c, const Value& out) {
  if (c.n.inputs.size() < 3) c.fail("expects an input and at least two index tensors (one: float_take)");
  same_dtype_out(c, out);
  const Shape& x = c.in(0).shape;
  const std::vector<int64_t> axes = c.axes("axes", x.size());
  if (axes.size() != c.n.inputs.size() - 1) c.fail("axes names " + std::to_string(axes.size()) + " axes for " +
                                                   std::to_string(c.n.inputs.size() - 1) + " index tensors");
  Shape indexed = c.in(1).shape;
  for (size_t j = 0; j < axes.size(); ++j) {
    c.indices(c.in(j + 1));
    if (j && axes[j] != axes[j - 1] + 1) c.fail("the indexed axes must be consecutive and ascending");
    indexed = c.broadcast(indexed, c.in(j + 1).shape);
  }
  Shape s(x.begin(), x.begin() + axes.front());
  s.insert(s.end(), indexed.begin(), indexed.end());
  s.insert(s.end(), x.begin() + axes.back() + 1, x.end());
  return s;
}

// --- emission -------------------------------------------------------------------

void reshape_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.reshape(" + e.in_name(n, 0) + ", " + e.attr_shape_expr(n, "shape") + ")");
}

void permute_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.permute_dims(" + e.in_name(n, 0) + ", axes=" + int_list(n.ints_attr("perm")) + ")");
}

void cat_emit(Emitter& e, const Node& n) {
  std::string parts = "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) parts += e.in_name(n, i) + ", ";
  e.line(e.out_name(n), "R.concat(" + parts + "), axis=" + std::to_string(n.int_attr("axis")) + ")");
}

// The rule checked the range at every size the graph takes, so it is in bounds (which lets Relax infer the shape
// of a slice whose end follows a symbolic dim).
void slice_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.strided_slice(" + e.in_name(n, 0) + ", axes=[" + std::to_string(n.int_attr("axis")) + "], begin=[" +
                            e.attr_entry(n, "begin", 0) + "], end=[" + e.attr_entry(n, "end", 0) + "], strides=[" +
                            std::to_string(slice_step(n)) + "], assume_inbound=True)");
}

void expand_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.broadcast_to(" + e.in_name(n, 0) + ", " + e.attr_shape_expr(n, "shape") + ")");
}

void flip_emit(Emitter& e, const Node& n) {
  std::string y = e.in_name(n, 0);
  for (int64_t axis : n.ints_attr("axes")) y = "R.flip(" + y + ", axis=" + std::to_string(axis) + ")";
  e.line(e.out_name(n), y);
}

// Constant padding is R.nn.pad; the other modes take, along each padded axis, the source index of every output
// position (PyTorch's rules, float_pad_source_index), which R.nn.pad's edge mode does not follow in TVM 0.27.
void pad_emit(Emitter& e, const Node& n) {
  const std::string& x = e.in_name(n, 0);
  const auto& pads = n.ints_attr("pads");
  const int64_t mode = n.int_attr("mode");
  if (mode == 0) {
    return e.line(e.out_name(n), "R.nn.pad(" + x + ", pad_width=" + int_list(pads) + ", pad_mode=\"constant\", pad_value=" +
                                     float_literal(n.float_attr("value")) + ")");
  }
  const Shape& shape = e.graph().value(n.inputs[0]).shape;
  std::string y = x;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!pads[2 * d] && !pads[2 * d + 1]) continue;
    std::vector<int64_t> index;
    for (int64_t i = 0; i < shape[d] + pads[2 * d] + pads[2 * d + 1]; ++i) {
      index.push_back(float_pad_source_index(i - pads[2 * d], shape[d], mode));
    }
    y = e.emit(e.out_name(n) + "_axis" + std::to_string(d),
               "R.take(" + y + ", R.const(" + int_list(index) + ", \"int64\"), axis=" + std::to_string(d) + ")");
  }
  e.line(e.out_name(n), y);
}

void repeat_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.tile(" + e.in_name(n, 0) + ", repeats=" + int_list(n.ints_attr("repeats")) + ")");
}

// Negative indices count from the end: i + size where i < 0.
std::string wrapped_index(Emitter& e, const Node& n, size_t input, const std::string& i, int64_t size) {
  const std::string dtype = dtype_name(e.graph().value(n.inputs[input]).dtype);
  const std::string size_const = "R.const(" + std::to_string(size) + ", \"" + dtype + "\")";
  return e.emit(e.out_name(n) + "_index" + std::to_string(input),
                "R.where(R.less(" + i + ", R.const(0, \"" + dtype + "\")), R.add(" + i + ", " + size_const + "), " + i + ")");
}

// R.take of `x` along `axis` by the index variable `index`, negative indices counted from the end of axis
// `source_axis` of the node's input. An extent that follows a symbolic dim has no constant to add to a negative
// index, so R.take's wrap mode does it (the same for indices in [-size, size), the only ones the runtime accepts).
std::string take_axis(Emitter& e, const Node& n, const std::string& x, const std::string& index, size_t axis,
                      size_t source_axis, size_t input) {
  const int value = n.inputs[0];
  if (e.dim_slope(value, source_axis) != 0) {
    return "R.take(" + x + ", " + index + ", axis=" + std::to_string(axis) + ", mode=\"wrap\")";
  }
  const std::string wrapped = wrapped_index(e, n, input, index, e.graph().value(value).shape[source_axis]);
  return "R.take(" + x + ", " + wrapped + ", axis=" + std::to_string(axis) + ")";
}

void take_emit(Emitter& e, const Node& n) {
  int64_t axis = n.int_attr("axis");
  if (axis < 0) axis += static_cast<int64_t>(e.graph().value(n.inputs[0]).shape.size());
  e.line(e.out_name(n), take_axis(e, n, e.in_name(n, 0), e.in_name(n, 1), static_cast<size_t>(axis), static_cast<size_t>(axis), 1));
}

void gather_emit(Emitter& e, const Node& n) {
  e.line(e.out_name(n), "R.gather_elements(" + e.in_name(n, 0) + ", " + e.in_name(n, 1) + ", axis=" +
                            std::to_string(n.int_attr("axis")) + ")");
}

// Indexed axes of extent 1 but one (HF's mask[batch_index, position]): an index of such an axis can only be 0 (or
// -1), so it adds nothing but its shape to the broadcast of the indices. The input without those axes is taken
// along the other one by its index (raised to the broadcast rank), then broadcast to the output.
void index_one_live_axis(Emitter& e, const Node& n, const std::vector<int64_t>& axes, size_t live) {
  const int value = n.inputs[0], index = n.inputs[live + 1];
  const Shape& x = e.graph().value(value).shape;
  std::string dims;
  for (size_t d = 0; d < x.size(); ++d) {
    const bool dropped = d >= static_cast<size_t>(axes.front()) && d <= static_cast<size_t>(axes.back()) &&
                         d != static_cast<size_t>(axes[live]);
    if (!dropped) dims += (dims.empty() ? "" : ", ") + e.value_dim_expr(value, d);
  }
  const std::string flat = e.emit(e.out_name(n) + "_merged", "R.reshape(" + e.in_name(n, 0) + ", R.shape([" + dims + "]))");
  size_t rank = 0;
  for (size_t j = 1; j < n.inputs.size(); ++j) rank = std::max(rank, e.graph().value(n.inputs[j]).shape.size());
  const size_t own = e.graph().value(index).shape.size();
  std::string raised;
  for (size_t d = 0; d < rank; ++d) raised += (d ? ", " : "") + (d < rank - own ? std::string("1") : e.value_dim_expr(index, d - (rank - own)));
  const std::string i = e.emit(e.out_name(n) + "_index", "R.reshape(" + e.in_name(n, live + 1) + ", R.shape([" + raised + "]))");
  const std::string taken = take_axis(e, n, flat, i, static_cast<size_t>(axes.front()), static_cast<size_t>(axes[live]), live + 1);
  e.line(e.out_name(n), "R.broadcast_to(" + e.emit(e.out_name(n) + "_taken", taken) + ", " + e.value_shape_expr(n.output) + ")");
}

// The indexed axes merged into one, indexed by sum_j i_j * stride_j (strides of the merged axes).
void index_emit(Emitter& e, const Node& n) {
  const Shape& x = e.graph().value(n.inputs[0]).shape;
  std::vector<int64_t> axes = n.ints_attr("axes");
  for (int64_t& a : axes) a += a < 0 ? static_cast<int64_t>(x.size()) : 0;
  if (axes.size() == 1) {
    const size_t axis = static_cast<size_t>(axes[0]);
    return e.line(e.out_name(n), take_axis(e, n, e.in_name(n, 0), e.in_name(n, 1), axis, axis, 1));
  }
  std::vector<size_t> live;
  for (size_t j = 0; j < axes.size(); ++j) {
    if (x[axes[j]] != 1) live.push_back(j);
  }
  if (live.size() == 1) return index_one_live_axis(e, n, axes, live[0]);
  std::vector<int64_t> merged(x.begin(), x.begin() + axes.front());
  int64_t extent = 1;
  for (int64_t a : axes) extent *= x[a];
  merged.push_back(extent);
  merged.insert(merged.end(), x.begin() + axes.back() + 1, x.end());
  const std::string flat = e.emit(e.out_name(n) + "_merged", "R.reshape(" + e.in_name(n, 0) + ", " + e.shape_expr(merged) + ")");
  std::string linear;
  int64_t stride = extent;
  for (size_t j = 0; j < axes.size(); ++j) {
    stride /= x[axes[j]];
    const std::string i = wrapped_index(e, n, j + 1, e.in_name(n, j + 1), x[axes[j]]);
    const std::string dtype = dtype_name(e.graph().value(n.inputs[j + 1]).dtype);
    const std::string term = "R.astype(R.multiply(" + i + ", R.const(" + std::to_string(stride) + ", \"" + dtype + "\")), \"int64\")";
    linear = linear.empty() ? term : "R.add(" + linear + ", " + term + ")";
  }
  e.line(e.out_name(n), "R.take(" + flat + ", " + linear + ", axis=" + std::to_string(axes.front()) + ")");
}

}  // namespace

std::vector<OpDef> float_movement_ops() {
  std::vector<OpDef> defs = {
      {"float_reshape", OpKind::Float, reshape_rule, reshape_emit, function_runner<run_float_reshape>},
      {"float_permute", OpKind::Float, permute_rule, permute_emit, function_runner<run_float_permute>},
      {"float_cat", OpKind::Float, cat_rule, cat_emit, function_runner<run_float_cat>},
      {"float_slice", OpKind::Float, slice_rule, slice_emit, function_runner<run_float_slice>},
      {"float_expand", OpKind::Float, expand_rule, expand_emit, function_runner<run_float_expand>},
      {"float_flip", OpKind::Float, flip_rule, flip_emit, function_runner<run_float_flip>},
      {"float_pad", OpKind::Float, pad_rule, pad_emit, function_runner<run_float_pad>},
      {"float_repeat", OpKind::Float, repeat_rule, repeat_emit, function_runner<run_float_repeat>},
      {"float_take", OpKind::Float, take_rule, take_emit, function_runner<run_float_take>},
      {"float_gather", OpKind::Float, gather_rule, gather_emit, function_runner<run_float_gather>},
      {"float_index", OpKind::Float, index_rule, index_emit, function_runner<run_float_index>},
  };
  for (OpDef& def : defs) def.any_dtype = true;
  return defs;
}

}  // namespace qnnpy
