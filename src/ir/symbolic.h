// A symbolic dimension (a sequence length): one size shared by some input axes, any value in [1, max] at run
// time. A graph with one is built at its example size; the integer attributes that follow the size are recorded
// with their slope, and constants that follow it (a causal mask, rotary tables) are held at the largest size and
// cut to the run's by float_slice nodes. The graph is found by converting the model at three sizes and fitting
// every attribute that differs as value = offset + slope * size (generalize), then checked by rebuilding it at
// those sizes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qnnpy {

class Graph;

struct SymbolicDim {
  // An integer attribute entry that follows the size: at size s it is its value in the graph + slope * (s - example).
  struct Attr {
    int node = 0;
    std::string key;
    int entry = 0;
    int64_t slope = 0;
  };
  std::string name;                              // the Relax symbolic var, e.g. "seq"
  int64_t example = 0;                           // the size of the graph's own shapes
  int64_t max = 0;                               // the largest size it runs
  std::vector<std::pair<int, int>> input_axes;   // (input index, axis) that hold the size
  std::vector<Attr> attrs;
};

// The symbolic graph from three conversions of one model: `example` at spec.example, `at_max` at spec.max and
// `below_max` at spec.max - 1 (the caller sets spec's name, example, max and input axes; the attrs are found
// here). Throws std::invalid_argument naming the first node, attribute or param that is not the same computation
// at every size: a different op, a float attribute or param that changes, an integer attribute that is not
// affine in the size, a constant that is not the leading block of its table at the largest size.
Graph generalize(const Graph& example, const Graph& at_max, const Graph& below_max, const SymbolicDim& spec);

// `g` (which has a symbolic dim) at size `size` in [1, max]: input axes and the recorded attributes set, every
// node through its rule again. The result keeps the symbolic dim, with `size` as its example. Throws
// std::invalid_argument naming the size or the node that refuses it.
Graph at_size(const Graph& g, int64_t size);
// The same with the inputs shaped `input_shapes` (every extent that follows the size already set by the caller):
// for graphs whose inputs follow the size in other ways than input_axes can say, such as the one-node graphs of the
// kernels form (tvm_kernels/node_spec.h), whose inputs are inner values of the model (a length times the heads).
Graph at_size(const Graph& g, int64_t size, std::vector<std::vector<int64_t>> input_shapes);

// Per value, per axis, how its extent follows the size (0: fixed), measured by rebuilding `g` at another size.
std::vector<std::vector<int64_t>> value_slopes(const Graph& g);

}  // namespace qnnpy
