// libFuzzer target: the graph file loader (src/ir/serialize.cpp) and what a loaded
// graph reaches next when `qnnpy.QDQModule.load` hands it on: re-serialization, the
// TVMScript emitter and the integer runtime (scalar and, where the CPU has it, AVX2).
//
// Checks, beyond the sanitizers: a file is loaded or refused with std::invalid_argument;
// a loaded graph serializes back to a file that loads to the same bytes; the scalar and
// AVX2 kernels give the same bytes (they are twins, bit-exact).
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "emit/tvmscript.h"
#include "fuzz_contract.h"
#include "ir/serialize.h"
#include "run_graph.h"

namespace {

using qnnpy::Graph;

void load_and_use(const std::string& bytes) {
  auto g = std::make_shared<const Graph>(qnnpy::deserialize_graph(bytes));
  const std::string again = qnnpy::serialize_graph(*g);
  try {
    if (qnnpy::serialize_graph(qnnpy::deserialize_graph(again)) != again) {
      qnnpy::fuzz::finding("graph_file", "a loaded graph does not survive save -> load unchanged");
    }
  } catch (const std::invalid_argument& e) {
    qnnpy::fuzz::finding("graph_file", (std::string("a saved graph does not load again: ") + e.what()).c_str());
  }
  qnnpy::emit_tvmscript(*g);
  // The file's length picks the profile and the SIMD set, so the corpus covers them all.
  qnnpy::fuzz::run_on_scalar_and_simd("graph_file", g, bytes.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  qnnpy::fuzz::expect_clean_refusal("graph_file", [&] { load_and_use(bytes); });
  return 0;
}
