#include "emit/tvmscript.h"

#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>

#include "emit/exported_params.h"
#include "ir/nearest.h"

namespace qnnpy {
namespace {

// 17 significant digits print the exact double of a float32, so the parsed
// constant converts back to the same float32.
std::string float_const(float v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
  return std::string("R.const(") + buf + ", \"float32\")";
}

std::string float_literal(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string int_const(int64_t v) { return "R.const(" + std::to_string(v) + ", \"int32\")"; }

std::string int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string tensor_type(const Shape& shape, DType dtype) {
  std::string s = "R.Tensor(" + shape_str(shape);
  return s + ", \"" + dtype_name(dtype) + "\")";
}

// Symmetric padding (h, w) in Relax's (top, left, bottom, right) order.
std::string padding4(const std::vector<int64_t>& p) { return int_list({p[0], p[1], p[0], p[1]}); }

class Emitter {
 public:
  explicit Emitter(const Graph& g) : g_(g) {
    for (const Value& v : g.values()) taken_.insert(v.name);
    for (const ExportedParam& p : exported_params(g)) {
      if (!taken_.insert(p.name).second) throw std::logic_error("duplicate Relax parameter name '" + p.name + "'");
    }
  }

  std::string run(const std::string& func_name) {
    std::ostringstream head;
    head << "# from tvm.script import ir as I\n"
         << "# from tvm.script import relax as R\n\n"
         << "@I.ir_module\nclass Module:\n    @R.function\n    def " << func_name << "(";
    std::vector<std::string> args;
    for (int id : g_.inputs()) args.push_back(g_.value(id).name + ": " + tensor_type(g_.value(id).shape, DType::Float32));
    for (const ExportedParam& p : exported_params(g_)) args.push_back(p.name + ": " + tensor_type(p.shape, p.dtype));
    for (size_t i = 0; i < args.size(); ++i) head << (i ? ",\n            " : "") << args[i];
    head << "):\n        R.func_attr({\"num_input\": " << g_.inputs().size() << "})\n"
         << "        with R.dataflow():\n";
    for (const Node& n : g_.nodes()) emit_node(n);
    std::string result;
    if (g_.outputs().size() == 1) {
      result = g_.value(g_.outputs()[0]).name;
    } else {
      result = fresh("outputs");
      std::string tuple = "(";
      for (int id : g_.outputs()) tuple += g_.value(id).name + ", ";
      line(result, tuple + ")");
    }
    body_ << "            R.output(" << result << ")\n        return " << result << "\n";
    return head.str() + body_.str();
  }

 private:
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; !taken_.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    return name;
  }

  void line(const std::string& var, const std::string& expr) { body_ << "            " << var << " = " << expr << "\n"; }

  std::string emit(const std::string& base, const std::string& expr) {
    std::string var = fresh(base);
    line(var, expr);
    return var;
  }

  // Per-tensor qparams as constants; per-channel ones as the exported params.
  std::string scale_arg(const QParams& q, const std::string& param_name) const {
    return q.per_channel() ? param_name + "_scale" : float_const(q.scale[0]);
  }
  std::string zero_point_arg(const QParams& q, const std::string& param_name) const {
    if (q.per_channel()) return has_nonzero_zero_point(q) ? param_name + "_zero_point" : int_const(0);
    return int_const(q.zero_point[0]);
  }

  std::string dequantize_value(int id, const std::string& base) {
    const Value& v = g_.value(id);
    return emit(base, "R.dequantize(" + v.name + ", " + float_const(v.q.scale[0]) + ", " + int_const(v.q.zero_point[0]) +
                          ", out_dtype=\"float32\")");
  }

  std::string dequantize_param(const Param& p, const std::string& base) {
    std::string axis = p.q.per_channel() ? ", axis=0" : "";
    return emit(base, "R.dequantize(" + p.name + ", " + scale_arg(p.q, p.name) + ", " + zero_point_arg(p.q, p.name) +
                          axis + ", out_dtype=\"float32\")");
  }

  void quantize_to(const Value& out, const std::string& src) {
    line(out.name, "R.quantize(" + src + ", " + float_const(out.q.scale[0]) + ", " + int_const(out.q.zero_point[0]) +
                       ", out_dtype=\"" + dtype_name(out.dtype) + "\")");
  }

  // Adds the dequantized int32 bias (broadcast along `channel_axis`) and the fused relu.
  std::string bias_and_relu(const Node& n, std::string acc, const std::string& o, int rank) {
    if (n.has_param("bias")) {
      const Param& b = g_.node_param(n, "bias");
      std::string bias = dequantize_param(b, o + "_bias");
      if (rank == 4) {
        bias = emit(o + "_bias_nchw", "R.reshape(" + bias + ", R.shape([1, " + std::to_string(b.shape[0]) + ", 1, 1]))");
      }
      acc = emit(o + "_biased", "R.add(" + acc + ", " + bias + ")");
    }
    if (n.ints.count("relu") && n.int_attr("relu")) acc = emit(o + "_relu", "R.nn.relu(" + acc + ")");
    return acc;
  }

  void emit_node(const Node& n) {
    const Value& out = g_.value(n.output);
    const std::string& o = out.name;
    if (n.op == "quantize") {
      quantize_to(out, g_.value(n.inputs[0]).name);
    } else if (n.op == "dequantize") {
      const Value& x = g_.value(n.inputs[0]);
      line(o, "R.dequantize(" + x.name + ", " + float_const(x.q.scale[0]) + ", " + int_const(x.q.zero_point[0]) +
                  ", out_dtype=\"float32\")");
    } else if (n.op == "conv2d" || n.op == "conv_transpose2d") {
      const bool transposed = n.op == "conv_transpose2d";
      std::string x = dequantize_value(n.inputs[0], o + "_x");
      std::string w = dequantize_param(g_.node_param(n, "weight"), o + "_w");
      std::string extra = transposed ? ", output_padding=" + int_list(n.ints_attr("output_padding")) : "";
      std::string y = emit(o + (transposed ? "_deconv" : "_conv"),
                           (transposed ? "R.nn.conv2d_transpose(" : "R.nn.conv2d(") + x + ", " + w +
                               ", strides=" + int_list(n.ints_attr("stride")) + ", padding=" +
                               padding4(n.ints_attr("padding")) + extra + ", dilation=" +
                               int_list(n.ints_attr("dilation")) + ", groups=" + std::to_string(n.int_attr("groups")) + ")");
      quantize_to(out, bias_and_relu(n, y, o, 4));
    } else if (n.op == "linear") {
      std::string x = dequantize_value(n.inputs[0], o + "_x");
      std::string w = dequantize_param(g_.node_param(n, "weight"), o + "_w");
      std::string wt = emit(o + "_wt", "R.permute_dims(" + w + ", axes=[1, 0])");
      std::string y = emit(o + "_matmul", "R.matmul(" + x + ", " + wt + ")");
      quantize_to(out, bias_and_relu(n, y, o, 2));
    } else if (n.op == "add" || n.op == "mul") {
      std::string a = dequantize_value(n.inputs[0], o + "_a");
      std::string b = dequantize_value(n.inputs[1], o + "_b");
      std::string y = emit(o + (n.op == "add" ? "_sum" : "_prod"), (n.op == "add" ? "R.add(" : "R.multiply(") + a + ", " + b + ")");
      quantize_to(out, bias_and_relu(n, y, o, 0));
    } else if (n.op == "batch_norm2d") {
      std::string x = dequantize_value(n.inputs[0], o + "_x");
      std::string args;
      for (const char* role : {"bn_weight", "bn_bias", "bn_running_mean", "bn_running_var"}) args += ", " + g_.node_param(n, role).name;
      std::string bn = emit(o + "_bn", "R.nn.batch_norm(" + x + args + ", axis=1, epsilon=" + float_literal(n.float_attr("eps")) +
                                           ", training=False)");
      quantize_to(out, bias_and_relu(n, emit(o + "_norm", bn + "[0]"), o, 4));
    } else if (n.op == "cat") {
      std::string parts = "(";
      for (size_t i = 0; i < n.inputs.size(); ++i) parts += dequantize_value(n.inputs[i], o + "_in" + std::to_string(i)) + ", ";
      quantize_to(out, emit(o + "_cat", "R.concat(" + parts + "), axis=" + std::to_string(n.int_attr("axis")) + ")"));
    } else {
      std::string x = dequantize_value(n.inputs[0], o + "_x");
      quantize_to(out, emit(o + "_f", unary_expr(n, x)));
    }
  }

  std::string unary_expr(const Node& n, const std::string& x) const {
    if (n.op == "relu") return "R.nn.relu(" + x + ")";
    if (n.op == "max_pool2d") {
      return "R.nn.max_pool2d(" + x + ", pool_size=" + int_list(n.ints_attr("kernel")) +
             ", strides=" + int_list(n.ints_attr("stride")) + ", padding=" + padding4(n.ints_attr("padding")) +
             ", dilation=" + int_list(n.ints_attr("dilation")) +
             ", ceil_mode=" + (n.int_attr("ceil_mode") ? "True" : "False") + ")";
    }
    if (n.op == "adaptive_avg_pool2d") {
      return "R.nn.adaptive_avg_pool2d(" + x + ", output_size=" + int_list(n.ints_attr("output_size")) + ")";
    }
    if (n.op == "reshape") return "R.reshape(" + x + ", R.shape(" + int_list(n.ints_attr("shape")) + "))";
    if (n.op == "add_scalar") return "R.add(" + x + ", " + float_const(static_cast<float>(n.float_attr("scalar"))) + ")";
    if (n.op == "mul_scalar") return "R.multiply(" + x + ", " + float_const(static_cast<float>(n.float_attr("scalar"))) + ")";
    // hardswish(x) = x * relu6(x + 3) / 6 and hardsigmoid(x) = relu6(x + 3) / 6, as PyTorch defines them.
    const std::string relu6_x_plus_3 = "R.clip(R.add(" + x + ", " + float_const(3.0f) + "), 0.0, 6.0)";
    if (n.op == "hardswish") return "R.divide(R.multiply(" + x + ", " + relu6_x_plus_3 + "), " + float_const(6.0f) + ")";
    if (n.op == "hardsigmoid") return "R.divide(" + relu6_x_plus_3 + ", " + float_const(6.0f) + ")";
    if (n.op == "sigmoid") return "R.sigmoid(" + x + ")";
    if (n.op == "leaky_relu") return "R.nn.leakyrelu(" + x + ", alpha=" + float_literal(n.float_attr("alpha")) + ")";
    if (n.op == "clamp") {
      return "R.clip(" + x + ", " + float_literal(n.float_attr("min")) + ", " + float_literal(n.float_attr("max")) + ")";
    }
    if (n.op == "avg_pool2d") return avg_pool2d_expr(n, x);
    if (n.op == "mean") {
      return "R.mean(" + x + ", axis=[2, 3], keepdims=" + (n.int_attr("keepdim") ? "True" : "False") + ")";
    }
    if (n.op == "permute") return "R.permute_dims(" + x + ", axes=" + int_list(n.ints_attr("perm")) + ")";
    if (n.op == "slice") {
      return "R.strided_slice(" + x + ", axes=[" + std::to_string(n.int_attr("axis")) + "], begin=[" +
             std::to_string(n.int_attr("begin")) + "], end=[" + std::to_string(n.int_attr("end")) + "])";
    }
    if (n.op == "upsample_nearest2d") return upsample_nearest_expr(n, x);
    throw std::invalid_argument("TVMScript emitter: no rule for op '" + n.op + "' (" + n.source + ")");
  }

  // PyTorch's nearest upsampling. Without a scale factor its source index is
  // floor(dst * in / out), which resize2d's asymmetric / floor mode computes; with one
  // (1 / scale_factor instead of in / out) the rows and columns are gathered explicitly.
  std::string upsample_nearest_expr(const Node& n, const std::string& x) const {
    const Shape& in = g_.value(n.inputs[0]).shape;
    const auto& size = n.ints_attr("output_size");
    const double scale[2] = {n.float_attr("scale_h"), n.float_attr("scale_w")};
    if (scale[0] <= 0 && scale[1] <= 0) {
      return "R.image.resize2d(" + x + ", R.shape(" + int_list(size) +
             "), method=\"nearest_neighbor\", coordinate_transformation_mode=\"asymmetric\", rounding_method=\"floor\")";
    }
    std::string expr = x;
    for (int axis = 0; axis < 2; ++axis) {
      std::vector<int64_t> index(static_cast<size_t>(size[axis]));
      for (int64_t d = 0; d < size[axis]; ++d) index[d] = nearest_source_index(d, in[2 + axis], size[axis], scale[axis]);
      expr = "R.take(" + expr + ", R.const(" + int_list(index) + ", \"int64\"), axis=" + std::to_string(2 + axis) + ")";
    }
    return expr;
  }

  // avg_pool2d; a divisor_override d scales PyTorch's count_include_pad average by kh * kw / d.
  std::string avg_pool2d_expr(const Node& n, const std::string& x) const {
    const auto& k = n.ints_attr("kernel");
    const int64_t divisor = n.int_attr("divisor_override");
    std::string pool = "R.nn.avg_pool2d(" + x + ", pool_size=" + int_list(k) + ", strides=" + int_list(n.ints_attr("stride")) +
                       ", padding=" + padding4(n.ints_attr("padding")) +
                       ", ceil_mode=" + (n.int_attr("ceil_mode") ? "True" : "False") +
                       ", count_include_pad=" + (n.int_attr("count_include_pad") || divisor ? "True" : "False") + ")";
    if (!divisor) return pool;
    return "R.multiply(" + pool + ", " + float_const(static_cast<float>(k[0] * k[1]) / static_cast<float>(divisor)) + ")";
  }

  const Graph& g_;
  std::set<std::string> taken_;
  std::ostringstream body_;
};

}  // namespace

std::string emit_tvmscript(const Graph& g, const std::string& func_name) {
  if (g.outputs().empty()) throw std::invalid_argument("graph has no outputs");
  return Emitter(g).run(func_name);
}

}  // namespace qnnpy
