// 256-entry tables for ops whose output is a function of one 8-bit input value.
//
// PyTorch's element-wise kernels (fbgemm engine) compute vector lanes and the
// scalar remainder of each row with slightly different float formulas
// (aten/src/ATen/native/cpu/Loops.h: blocks of 64, then a scalar tail), so an
// op has one table for each; QNNPACK builds a single table itself.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "ir/graph.h"
#include "runtime/prepared_op.h"
#include "runtime/profile.h"

namespace qnnpy {

using ByteTable = std::array<uint8_t, 256>;

struct UnaryTables {
  ByteTable vector{}, tail{};
};

// Input and output quantization of a one-input node.
struct TableQuant {
  float in_scale, out_scale;
  int32_t in_zp, out_zp, lo, hi;  // lo, hi: the output dtype's range
  bool is_signed;                 // int8 input
};

TableQuant table_quant(const Graph& g, const Node& n);

// The tables of each table op under a profile.
UnaryTables hardswish_tables(const TableQuant& q, const Node& n, Profile profile);
UnaryTables hardsigmoid_tables(const TableQuant& q, const Node& n, Profile profile);
UnaryTables sigmoid_tables(const TableQuant& q, const Node& n, Profile profile);
UnaryTables leaky_relu_tables(const TableQuant& q, const Node& n, Profile profile);
UnaryTables clamp_tables(const TableQuant& q, const Node& n, Profile profile);
UnaryTables mul_scalar_tables(const TableQuant& q, const Node& n, Profile profile);
UnaryTables add_scalar_tables(const TableQuant& q, const Node& n, Profile profile);
UnaryTables elu_tables(const TableQuant& q, const Node& n, Profile profile);
UnaryTables tanh_tables(const TableQuant& q, const Node& n, Profile profile);

// Requantization of one value from (in_scale, in_zp) to (out_scale, out_zp) as
// PyTorch's qcat does it: vector lanes dequantize with fma and quantize with
// (float)(1.0 / out_scale); the scalar lanes use dequantize_val / quantize_val.
UnaryTables requantize_tables(bool is_signed, float in_scale, int32_t in_zp, float out_scale, int32_t out_zp,
                              int32_t lo, int32_t hi);

// Every value goes through the vector-lane table, then the last numel % 64
// elements in PyTorch's memory order through the scalar-tail table.
void run_table(const OpArgs& a, const UnaryTables& t);

// A table op's runner: its tables are built once per Executor.
class TableRunner final : public PreparedOp {
 public:
  explicit TableRunner(UnaryTables t) : t_(t) {}
  const char* run(const OpArgs& a) const override {
    run_table(a, t_);
    return "";
  }
  const UnaryTables& tables() const { return t_; }

 private:
  UnaryTables t_;
};

using TableBuilder = UnaryTables (*)(const TableQuant& q, const Node& n, Profile profile);

// The runner factory of a table op whose tables B builds.
template <TableBuilder B>
std::unique_ptr<PreparedOp> table_runner(const Graph& g, const Node& n, Profile profile) {
  return std::make_unique<TableRunner>(B(table_quant(g, n), n, profile));
}

}  // namespace qnnpy
