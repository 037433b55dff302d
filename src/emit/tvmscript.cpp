#include "emit/tvmscript.h"

#include <stdexcept>

#include "emit/emitter.h"

namespace qnnpy {

std::string emit_tvmscript(const Graph& g, const std::string& func_name) {
  if (g.outputs().empty()) throw std::invalid_argument("graph has no outputs");
  return Emitter(g).run(func_name);
}

}  // namespace qnnpy
