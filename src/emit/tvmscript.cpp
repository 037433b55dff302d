#include "emit/tvmscript.h"

#include <sstream>
#include <stdexcept>

#include "emit/emitter.h"

namespace qnnpy {

std::string emit_tvmscript(const Graph& g, const std::string& func_name) {
  if (g.outputs().empty()) throw std::invalid_argument("graph has no outputs");
  std::string text = Emitter(g).run(func_name);
  if (!g.symbolic_dim()) return text;
  // An op that wrote an extent following the symbolic dim as a number shows as a line that changes when the same
  // graph is written at another size; such a module would be wrong at every size but one.
  const SymbolicDim& sym = *g.symbolic_dim();
  const int64_t other = sym.example < sym.max ? sym.max : sym.example - 1;
  const std::string moved = Emitter(at_size(g, other)).run(func_name);
  if (moved == text) return text;
  std::istringstream a(text), b(moved);
  std::string line_a, line_b;
  while (std::getline(a, line_a) && std::getline(b, line_b) && line_a == line_b) {
  }
  throw std::invalid_argument("TVMScript with the symbolic dim '" + sym.name + "': this line writes an extent that follows it " +
                              "as a number (at size " + std::to_string(sym.example) + " and " + std::to_string(other) +
                              "):\n" + line_a + "\n" + line_b);
}

}  // namespace qnnpy
