#include "ir/symbolic.h"

#include <cstring>
#include <map>
#include <stdexcept>

#include "ir/graph.h"

namespace qnnpy {
namespace {

[[noreturn]] void symbolic_fail(const std::string& msg) { throw std::invalid_argument("symbolic dim: " + msg); }

std::string node_where(const Node& n) { return n.op + " (" + n.source + ")"; }

// The slope of a number seen at max and max - 1, checked at the example size: it must be affine in the size.
int64_t fit(int64_t at_example, int64_t at_max, int64_t below_max, const SymbolicDim& s, const std::string& what) {
  const int64_t slope = at_max - below_max;
  if (at_max - slope * (s.max - s.example) != at_example) {
    symbolic_fail(what + " is not affine in '" + s.name + "': " + std::to_string(at_example) + " at size " +
        std::to_string(s.example) + ", " + std::to_string(below_max) + " at " + std::to_string(s.max - 1) + ", " +
        std::to_string(at_max) + " at " + std::to_string(s.max));
  }
  return slope;
}

bool same_qparams(const QParams& a, const QParams& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point && a.axis == b.axis;
}

bool same_param(const Param& a, const Param& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.exported == b.exported && same_qparams(a.q, b.q) &&
         a.bytes.vector() == b.bytes.vector();
}

// Whether `part` holds the leading block of `table` (same rank and dtype; every extent at most the table's).
bool leading_block(const Param& part, const Param& table) {
  const size_t rank = table.shape.size(), elem = dtype_size(table.dtype);
  if (part.shape.size() != rank || part.dtype != table.dtype) return false;
  for (size_t d = 0; d < rank; ++d) {
    if (part.shape[d] > table.shape[d]) return false;
  }
  // Walk the part's elements in order; each row along the last axis is one contiguous run in both.
  const int64_t count = num_elements(part.shape);
  if (count == 0) return true;
  const int64_t row = rank ? part.shape[rank - 1] : 1;
  std::vector<int64_t> index(rank, 0);
  const uint8_t* a = part.bytes.data();
  const uint8_t* t = table.bytes.data();
  for (int64_t done = 0; done < count; done += row) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset = offset * table.shape[d] + index[d];
    if (std::memcmp(a + done * elem, t + offset * elem, static_cast<size_t>(row) * elem) != 0) return false;
    for (int d = static_cast<int>(rank) - 2; d >= 0; --d) {
      if (++index[d] < part.shape[d]) break;
      index[d] = 0;
    }
  }
  return true;
}

// The input shapes of a sample must carry `size` on the symbolic axes and agree elsewhere.
void check_inputs(const Graph& e, const Graph& sample, int64_t size, const SymbolicDim& s) {
  if (sample.inputs().size() != e.inputs().size()) symbolic_fail("the conversions at different sizes have different inputs");
  for (size_t i = 0; i < e.inputs().size(); ++i) {
    Shape expected = e.value(e.inputs()[i]).shape;
    for (const auto& [input, axis] : s.input_axes) {
      if (input == static_cast<int>(i)) expected.at(static_cast<size_t>(axis)) = size;
    }
    const Value& v = sample.value(sample.inputs()[i]);
    if (v.shape != expected) symbolic_fail("input '" + v.name + "' has shape " + shape_str(v.shape) + " at size " + std::to_string(size));
  }
}

void compare_nodes(const Node& a, const Node& b) {
  if (a.op != b.op || a.inputs != b.inputs || a.floats != b.floats || a.params.size() != b.params.size() ||
      a.ints.size() != b.ints.size()) {
    symbolic_fail(node_where(a) + " is not the same computation at every size (" + b.op + " (" + b.source + ") in another conversion)");
  }
  for (const auto& [key, v] : a.ints) {
    auto it = b.ints.find(key);
    if (it == b.ints.end() || it->second.size() != v.size()) symbolic_fail(node_where(a) + ": attribute '" + key + "' changes length with the size");
  }
}

}  // namespace

Graph generalize(const Graph& e, const Graph& m, const Graph& b, const SymbolicDim& spec) {
  if (spec.max < 2 || spec.example < 1 || spec.example > spec.max) {
    symbolic_fail("sizes must satisfy 1 <= example <= max and max >= 2, got example " + std::to_string(spec.example) + ", max " +
        std::to_string(spec.max));
  }
  if (spec.input_axes.empty()) symbolic_fail("no input axis holds the size");
  for (const auto& [input, axis] : spec.input_axes) {
    if (input < 0 || input >= static_cast<int>(e.inputs().size())) symbolic_fail("no input " + std::to_string(input));
    const Shape& shape = e.value(e.inputs()[input]).shape;
    if (axis < 0 || axis >= static_cast<int>(shape.size()) || shape[axis] != spec.example) {
      symbolic_fail("axis " + std::to_string(axis) + " of input '" + e.value(e.inputs()[input]).name + "' " + shape_str(shape) +
          " does not hold the example size " + std::to_string(spec.example));
    }
  }
  check_inputs(e, m, spec.max, spec);
  check_inputs(e, b, spec.max - 1, spec);
  if (m.nodes().size() != e.nodes().size() || b.nodes().size() != e.nodes().size() || m.params().size() != e.params().size() ||
      b.params().size() != e.params().size() || m.outputs() != e.outputs() || b.outputs() != e.outputs()) {
    symbolic_fail("the conversions at different sizes differ in their nodes, params or outputs");
  }
  SymbolicDim sym = spec;
  sym.attrs.clear();
  // Constants that follow the size: param id -> the slope of each axis.
  std::map<int, std::vector<int64_t>> tables;
  for (size_t i = 0; i < e.nodes().size(); ++i) {
    const Node &ne = e.nodes()[i], &nm = m.nodes()[i], &nb = b.nodes()[i];
    compare_nodes(ne, nm);
    compare_nodes(ne, nb);
    for (const auto& [role, id] : ne.params) {
      if (nm.params.at(role) != id || nb.params.at(role) != id) symbolic_fail(node_where(ne) + ": param '" + role + "' differs between sizes");
      const Param &pe = e.param(id), &pm = m.param(id), &pb = b.param(id);
      if (pe.shape == pm.shape && pe.shape == pb.shape) {
        if (!same_param(pe, pm) || !same_param(pe, pb)) {
          symbolic_fail(node_where(ne) + ": param '" + pe.name + "' " + shape_str(pe.shape) + " takes other values at other sizes");
        }
        continue;
      }
      if (ne.op != "float_constant" || pe.shape.size() != pm.shape.size() || pb.shape.size() != pm.shape.size()) {
        symbolic_fail(node_where(ne) + ": param '" + pe.name + "' changes shape with the size; only a constant (float_constant) may");
      }
      std::vector<int64_t> slopes;
      for (size_t d = 0; d < pm.shape.size(); ++d) {
        slopes.push_back(fit(pe.shape[d], pm.shape[d], pb.shape[d], spec, node_where(ne) + ": axis " + std::to_string(d) + " of '" + pe.name + "'"));
      }
      if (!leading_block(pe, pm) || !leading_block(pb, pm)) {
        symbolic_fail(node_where(ne) + ": constant '" + pe.name + "' at size " + std::to_string(spec.example) +
            " is not the leading block of its values at size " + std::to_string(spec.max));
      }
      tables[id] = slopes;
    }
  }

  Graph out;
  for (size_t id = 0; id < e.params().size(); ++id) {
    Param p = tables.count(static_cast<int>(id)) ? m.param(static_cast<int>(id)) : e.param(static_cast<int>(id));
    p.name = e.param(static_cast<int>(id)).name;
    out.add_param(std::move(p));
  }
  std::vector<int> new_id(e.values().size(), -1);
  for (int id : e.inputs()) new_id[id] = out.add_input(e.value(id).name, e.value(id).shape, e.value(id).dtype);
  for (size_t i = 0; i < e.nodes().size(); ++i) {
    const Node &ne = e.nodes()[i], &nm = m.nodes()[i], &nb = b.nodes()[i];
    Node copy = ne;
    for (int& in : copy.inputs) in = new_id[in];
    const int index = static_cast<int>(out.nodes().size());
    for (const auto& [key, v] : ne.ints) {
      for (size_t k = 0; k < v.size(); ++k) {
        const int64_t slope = fit(v[k], nm.ints.at(key)[k], nb.ints.at(key)[k], spec,
                                  node_where(ne) + ": attribute '" + key + "'[" + std::to_string(k) + "]");
        if (slope != 0) sym.attrs.push_back({index, key, static_cast<int>(k), slope});
      }
    }
    const Value& v = e.value(ne.output);
    auto table = ne.op == "float_constant" ? tables.find(ne.params.at("value")) : tables.end();
    if (table == tables.end()) {
      new_id[ne.output] = out.add_node(std::move(copy), v, v.shape);
      continue;
    }
    // The table at the largest size, cut to the example's extent along each axis that follows the size.
    int value = out.add_node(std::move(copy), Value{v.name + "_table", v.dtype, {}, v.q});
    size_t cuts = 0;
    for (int64_t slope : table->second) cuts += slope != 0;
    for (size_t d = 0; d < table->second.size(); ++d) {
      if (table->second[d] == 0) continue;
      Node cut{"float_slice", ne.source, {value}, -1, {}, {{"axis", {static_cast<int64_t>(d)}}, {"begin", {0}}, {"end", {v.shape[d]}}}, {}};
      sym.attrs.push_back({static_cast<int>(out.nodes().size()), "end", 0, table->second[d]});
      value = out.add_node(std::move(cut), Value{--cuts ? v.name + "_cut" : v.name, v.dtype, {}, v.q});
    }
    new_id[ne.output] = value;
  }
  for (int id : e.outputs()) out.mark_output(new_id[id]);
  out.set_symbolic_dim(sym);
  // The fit is checked where it was measured: rebuilt at the other two sizes, every value has the shape it had.
  for (const auto& [sample, size] : {std::pair<const Graph*, int64_t>{&m, spec.max}, {&b, spec.max - 1}}) {
    const Graph rebuilt = at_size(out, size);
    for (size_t id = 0; id < e.values().size(); ++id) {
      if (rebuilt.value(new_id[id]).shape != sample->value(static_cast<int>(id)).shape) {
        symbolic_fail("value '" + e.value(static_cast<int>(id)).name + "' has shape " + shape_str(rebuilt.value(new_id[id]).shape) +
            " rebuilt at size " + std::to_string(size) + " but " + shape_str(sample->value(static_cast<int>(id)).shape) +
            " when converted at that size");
      }
    }
  }
  return out;
}

Graph at_size(const Graph& g, int64_t size) {
  if (!g.symbolic_dim()) throw std::invalid_argument("the graph has no symbolic dim");
  std::vector<Shape> input_shapes;
  for (int id : g.inputs()) input_shapes.push_back(g.value(id).shape);
  for (const auto& [input, axis] : g.symbolic_dim()->input_axes) {
    input_shapes.at(static_cast<size_t>(input)).at(static_cast<size_t>(axis)) = size;
  }
  return at_size(g, size, std::move(input_shapes));
}

Graph at_size(const Graph& g, int64_t size, std::vector<Shape> input_shapes) {
  if (!g.symbolic_dim()) throw std::invalid_argument("the graph has no symbolic dim");
  const SymbolicDim& sym = *g.symbolic_dim();
  if (size < 1 || size > sym.max) {
    symbolic_fail("'" + sym.name + "' must be in [1, " + std::to_string(sym.max) + "], got " + std::to_string(size));
  }
  if (input_shapes.size() != g.inputs().size()) throw std::invalid_argument("at_size: one shape per graph input expected");
  Graph out;
  for (const Param& p : g.params()) out.add_param(p);
  std::vector<int> new_id(g.values().size(), -1);
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    new_id[g.inputs()[i]] = out.add_input(v.name, input_shapes[i], v.dtype);
  }
  std::multimap<int, const SymbolicDim::Attr*> by_node;
  for (const SymbolicDim::Attr& a : sym.attrs) by_node.emplace(a.node, &a);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node copy = g.nodes()[i];
    for (int& in : copy.inputs) in = new_id[in];
    auto [first, last] = by_node.equal_range(static_cast<int>(i));
    for (auto it = first; it != last; ++it) {
      const SymbolicDim::Attr& a = *it->second;
      copy.ints.at(a.key).at(static_cast<size_t>(a.entry)) += a.slope * (size - sym.example);
    }
    const Value& v = g.value(g.nodes()[i].output);
    try {
      new_id[g.nodes()[i].output] = out.add_node(std::move(copy), Value{v.name, v.dtype, {}, v.q});
    } catch (const std::invalid_argument& err) {
      symbolic_fail(std::string(err.what()) + " (at '" + sym.name + "' = " + std::to_string(size) + ")");
    }
  }
  for (int id : g.outputs()) out.mark_output(new_id[id]);
  SymbolicDim moved = sym;
  moved.example = size;
  out.set_symbolic_dim(moved);
  return out;
}

std::vector<std::vector<int64_t>> value_slopes(const Graph& g) {
  const SymbolicDim& sym = *g.symbolic_dim();
  const int64_t other = sym.example < sym.max ? sym.example + 1 : sym.example - 1;
  const Graph moved = at_size(g, other);
  std::vector<std::vector<int64_t>> slopes;
  for (size_t id = 0; id < g.values().size(); ++id) {
    const Shape &a = g.value(static_cast<int>(id)).shape, &b = moved.value(static_cast<int>(id)).shape;
    std::vector<int64_t> row(a.size());
    for (size_t d = 0; d < a.size(); ++d) row[d] = (b[d] - a[d]) / (other - sym.example);
    slopes.push_back(std::move(row));
  }
  return slopes;
}

}  // namespace qnnpy
