// Embedding lookups (src/ops/embedding.cpp), in float32 as PyTorch's fbgemm computes them.
//
// quantized::embedding_byte / embedding_bag_byte prepack each uint8 row with a float scale and a
// float bias = zero_point * scale * -1 (aten/src/ATen/native/quantized/cpu/qembeddingbag_prepack.cpp),
// and fbgemm's EmbeddingSpMDM sums a bag as
//     acc = 0;  for each index i of the bag: acc = fma(w_i * scale, q, acc + w_i * bias)
// with w_i = 1 without per-sample weights (fbgemm src/RefImplementations.cc, EmbeddingSpMDM_ref;
// PyTorch runs fbgemm's generated SIMD code, which tests/test_embedding.py finds equal to this
// formula bit for bit). PyTorch's quantized
// embedding_bag_byte passes normalize_by_lengths = false whatever the module's mode, so a bag is
// always this sum (aten/src/ATen/native/quantized/cpu/qembeddingbag.cpp). embedding_byte is the
// bag of one index: fma(scale, q, 0 + bias). The build has -ffp-contract=off, so the products
// w_i * scale and w_i * bias are rounded before the fma as in fbgemm.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/affine_linear.h"
#include "runtime/ops/runners.h"

namespace qnnpy {
namespace {

// The row of the index at `position`, refused outside [0, rows): never read out of bounds.
int64_t checked_row(const OpArgs& a, int64_t index, size_t position, int64_t rows) {
  if (index < 0 || index >= rows) {
    a.fail("index " + std::to_string(index) + " (at position " + std::to_string(position) + " of input '" + a.in(0).name +
           "') is outside the table's " + std::to_string(rows) + " rows");
  }
  return index;
}

struct RowBytes {
  const uint8_t* q;
  const float* scale;
  const float* zero_point;
  int64_t rows, dim;
};

RowBytes byte_table(const OpArgs& a) {
  const Param& w = a.graph.node_param(a.node, "weight");
  return {w.data<uint8_t>(), a.graph.node_param(a.node, "weight_scale").data<float>(), a.graph.node_param(a.node, "weight_zero_point").data<float>(), w.shape[0], w.shape[1]};
}

// acc += the row's contribution, weighted by w (1 for an unweighted bag): fbgemm's step above.
void accumulate_row(const RowBytes& t, int64_t row, float w, float* acc) {
  const float bias = t.zero_point[row] * t.scale[row] * -1.0f;
  const float scale = w * t.scale[row], weighted_bias = w * bias;
  const uint8_t* q = t.q + row * t.dim;
  for (int64_t j = 0; j < t.dim; ++j) acc[j] = std::fma(scale, static_cast<float>(q[j]), acc[j] + weighted_bias);
}

}  // namespace

void run_embedding(const OpArgs& a) {
  const RowBytes t = byte_table(a);
  const std::vector<int64_t>& idx = a.in_buf().idx;
  std::vector<float>& out = a.out_buf().f;
  out.assign(idx.size() * t.dim, 0.0f);
  for (size_t i = 0; i < idx.size(); ++i) accumulate_row(t, checked_row(a, idx[i], i, t.rows), 1.0f, out.data() + i * t.dim);
}

void run_embedding_bag(const OpArgs& a) {
  const RowBytes t = byte_table(a);
  const Value& indices = a.in(0);
  const std::vector<int64_t>& idx = a.in_buf().idx;
  const int64_t count = static_cast<int64_t>(idx.size());
  const int64_t bags = a.out().shape[0];
  const size_t fixed_inputs = indices.shape.size() == 1 ? 2 : 1;
  const float* weights = a.node.inputs.size() > fixed_inputs ? a.in_buf(fixed_inputs).f.data() : nullptr;
  // Bag b holds positions [start[b], start[b + 1]).
  std::vector<int64_t> start(bags + 1);
  if (indices.shape.size() == 2) {
    for (int64_t b = 0; b <= bags; ++b) start[b] = b * indices.shape[1];
  } else {
    const std::vector<int64_t>& offsets = a.in_buf(1).idx;
    for (int64_t b = 0; b < bags; ++b) start[b] = offsets[b];
    start[bags] = a.node.int_attr("include_last_offset") ? offsets[bags] : count;
    for (int64_t b = 0; b < bags; ++b) {
      if (start[b] < 0 || start[b] > start[b + 1] || start[b + 1] > count) {
        a.fail("offsets '" + a.in(1).name + "' do not describe bags of the " + std::to_string(count) + " indices: bag " +
               std::to_string(b) + " would span [" + std::to_string(start[b]) + ", " + std::to_string(start[b + 1]) + ")");
      }
    }
  }
  std::vector<float>& out = a.out_buf().f;
  out.assign(bags * t.dim, 0.0f);
  for (int64_t b = 0; b < bags; ++b) {
    for (int64_t i = start[b]; i < start[b + 1]; ++i) {
      accumulate_row(t, checked_row(a, idx[i], i, t.rows), weights ? weights[i] : 1.0f, out.data() + b * t.dim);
    }
  }
}

void run_float_embedding(const OpArgs& a) {
  const Param& w = a.graph.node_param(a.node, "weight");
  const int64_t rows = w.shape[0], dim = w.shape[1];
  const std::vector<int64_t>& idx = a.in_buf().idx;
  std::vector<float>& out = a.out_buf().f;
  out.resize(idx.size() * dim);
  for (size_t i = 0; i < idx.size(); ++i) {
    const float* row = w.data<float>() + checked_row(a, idx[i], i, rows) * dim;
    std::copy(row, row + dim, out.data() + i * dim);
  }
}

// torchao's dequantize_affine of each looked-up row (runtime/affine_linear.h).
void run_affine_embedding(const OpArgs& a) {
  const Param& w = a.graph.node_param(a.node, "weight");
  const int64_t rows = w.shape[0], dim = w.shape[1], group = a.node.int_attr("group_size"), groups = dim / group;
  const float* scale = a.graph.node_param(a.node, "weight_scale").data<float>();
  const int8_t* zero_point = a.graph.node_param(a.node, "weight_zero_point").data<int8_t>();
  const float* offset = a.node.has_param("weight_offset") ? a.graph.node_param(a.node, "weight_offset").data<float>() : nullptr;
  const std::vector<int64_t>& idx = a.in_buf().idx;
  std::vector<float>& out = a.out_buf().f;
  out.resize(idx.size() * dim);
  for (size_t i = 0; i < idx.size(); ++i) {
    const int64_t r = checked_row(a, idx[i], i, rows);
    dequantize_affine_row(w.data<int8_t>() + r * dim, dim, group, scale + r * groups, zero_point + r * groups,
                          offset ? offset + r * groups : nullptr, out.data() + i * dim);
  }
}

}  // namespace qnnpy
