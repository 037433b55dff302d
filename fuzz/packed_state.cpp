// libFuzzer target: the packed-state decoder, i.e. what `qnnpy.from_torch` and the
// TorchScript reader call with the parts of a PyTorch packed-params state
// (src/layer_import: add_conv2d_node / add_conv_transpose2d_node / add_linear_node,
// which decode the conv configuration, check the weight's qparams and quantize the
// bias), followed by a run of the one-layer graph in the integer runtime.
//
// The input is a flat record (all little endian; reads past the end give zeros), the
// format scripts/make_fuzz_seeds.py writes from real quantized layers:
//   u8 layer (0 conv2d, 1 conv_transpose2d, 2 linear) | i32 state version
//   u8 n, n x i64 conv config
//   u8 rank, rank x i32 weight dims, then the int8 weight values
//   i32 weight axis | u8 n, n x f32 weight scales | u8 n, n x i32 weight zero points
//   u8 has bias, u16 n, n x f32 bias | u8 relu
//   u8 rank, rank x i32 input dims | f32 input scale | i32 input zero point
//   u8 output dtype (0 uint8, 1 int8) | f32 output scale | i32 output zero point
// Shapes the Python bindings cannot pass (negative dims) or that are too large to
// allocate here are skipped, not fuzzed: they are the bindings' preconditions.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_contract.h"
#include "layer_import/layer_nodes.h"
#include "run_graph.h"

namespace {

using qnnpy::Shape;

class Record {
 public:
  Record(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <class T> T take() {
    T v{};
    const size_t n = std::min(sizeof(T), size_ - pos_);
    std::memcpy(&v, data_ + pos_, n);
    pos_ += n;
    return v;
  }
  template <class T> std::vector<T> take_vector(size_t n) {
    std::vector<T> v(n);
    for (T& x : v) x = take<T>();
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

constexpr int64_t kMaxElements = int64_t{1} << 16;

// Reads a rank and its dims; false when the Python bindings could not pass such a shape.
bool take_shape(Record& r, Shape* shape) {
  const uint8_t rank = r.take<uint8_t>();
  if (rank > 6) return false;
  for (int32_t d : r.take_vector<int32_t>(rank)) shape->push_back(d);
  return qnnpy::fuzz::bounded_elements(*shape, kMaxElements) >= 0;
}

void build_and_run(const uint8_t* data, size_t size) {
  Record r(data, size);
  const uint8_t layer_kind = r.take<uint8_t>() % 3;
  const int32_t version = r.take<int32_t>();
  const std::vector<int64_t> config = r.take_vector<int64_t>(r.take<uint8_t>());

  Shape weight_shape;
  if (!take_shape(r, &weight_shape)) return;
  const std::vector<int8_t> weight =
      r.take_vector<int8_t>(static_cast<size_t>(qnnpy::fuzz::bounded_elements(weight_shape, kMaxElements)));
  qnnpy::QParams wq;
  wq.axis = r.take<int32_t>();
  wq.scale = r.take_vector<float>(r.take<uint8_t>());
  wq.zero_point = r.take_vector<int32_t>(r.take<uint8_t>());
  const bool has_bias = r.take<uint8_t>() & 1;
  const std::vector<float> bias = r.take_vector<float>(r.take<uint16_t>());
  const bool relu = r.take<uint8_t>() & 1;

  Shape input_shape;
  if (!take_shape(r, &input_shape)) return;
  const float input_scale = r.take<float>();
  const int32_t input_zero_point = r.take<int32_t>();
  const bool int8_output = r.take<uint8_t>() & 1;
  const float output_scale = r.take<float>();
  const int32_t output_zero_point = r.take<int32_t>();

  auto g = std::make_shared<qnnpy::Graph>();
  const int x = g->add_input("x", input_shape);
  qnnpy::Node quantize;
  quantize.op = "quantize";
  quantize.source = "quant";
  quantize.inputs = {x};
  qnnpy::Value q;
  q.name = "quant";
  q.dtype = qnnpy::DType::UInt8;
  q.q.scale = {input_scale};
  q.q.zero_point = {input_zero_point};
  const int qx = g->add_node(std::move(quantize), std::move(q));

  qnnpy::FloatSpan bias_span{bias.data(), static_cast<int64_t>(bias.size())};
  qnnpy::LayerNode layer;
  layer.input = qx;
  layer.source = "layer";
  layer.name = "layer";
  layer.weight.data = weight.data();
  layer.weight.shape = weight_shape;
  layer.weight.q = wq;
  layer.bias = has_bias ? &bias_span : nullptr;
  layer.relu = relu;
  layer.output.dtype = int8_output ? qnnpy::DType::Int8 : qnnpy::DType::UInt8;
  layer.output.q.scale = {output_scale};
  layer.output.q.zero_point = {output_zero_point};
  int y = -1;
  if (layer_kind == 0) y = qnnpy::add_conv2d_node(*g, std::move(layer), version, config);
  if (layer_kind == 1) y = qnnpy::add_conv_transpose2d_node(*g, std::move(layer), version, config);
  if (layer_kind == 2) y = qnnpy::add_linear_node(*g, std::move(layer));
  g->mark_output(y);
  qnnpy::fuzz::run_on_scalar_and_simd("packed_state", g, size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qnnpy::fuzz::expect_clean_refusal("packed_state", [&] { build_and_run(data, size); });
  return 0;
}
