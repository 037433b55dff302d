#include "kernel_tests/run_graph.h"

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "ir/serialize.h"
#include "runtime/executor.h"

namespace qnnpy::kernel_tests {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw std::runtime_error("cannot open '" + path + "'");
  std::string bytes(static_cast<size_t>(f.tellg()), '\0');
  f.seekg(0);
  if (!f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) throw std::runtime_error("cannot read '" + path + "'");
  return bytes;
}

template <class T>
void put(std::ofstream& f, T v) {
  f.write(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_string(std::ofstream& f, const std::string& s) {
  put(f, static_cast<uint32_t>(s.size()));
  f.write(s.data(), static_cast<std::streamsize>(s.size()));
}

void put_tensor(std::ofstream& f, const std::string& name, const HostTensor& t) {
  put_string(f, name);
  put_string(f, dtype_name(t.dtype));
  put(f, static_cast<uint32_t>(t.shape.size()));
  for (int64_t d : t.shape) put(f, d);
  put(f, static_cast<uint64_t>(t.bytes.size()));
  f.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
}

}  // namespace

void run_graph_file(const std::string& graph_path, const std::string& input_path, const std::string& output_path,
                    Profile profile, Isa isa, int threads) {
  auto graph = std::make_shared<const Graph>(deserialize_graph(read_file(graph_path)));
  const std::string raw = read_file(input_path);
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (int id : graph->inputs()) {
    if (graph->value(id).dtype != DType::Float32) {
      throw std::invalid_argument("input '" + graph->value(id).name + "' is " + dtype_name(graph->value(id).dtype) +
                                  ": this driver feeds float32 inputs only");
    }
    int64_t count = 1;
    for (int64_t d : graph->value(id).shape) count *= d;
    counts.push_back(count);
    total += count;
  }
  if (static_cast<int64_t>(raw.size()) != total * 4) {
    throw std::invalid_argument("'" + input_path + "' holds " + std::to_string(raw.size()) + " bytes; the graph's " +
                                std::to_string(counts.size()) + " input(s) need " + std::to_string(total * 4));
  }
  std::vector<float> values(static_cast<size_t>(total));
  std::memcpy(values.data(), raw.data(), raw.size());
  std::vector<const void*> inputs;
  int64_t offset = 0;
  for (int64_t c : counts) inputs.push_back(values.data() + offset), offset += c;

  Executor executor(graph, profile, isa, threads);
  std::map<std::string, HostTensor> captured;
  const std::vector<HostTensor> outputs = executor.run(inputs, &captured);

  std::ofstream f(output_path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot write '" + output_path + "'");
  f.write("QNNPYRUN", 8);
  put(f, static_cast<uint32_t>(outputs.size() + captured.size()));
  for (size_t i = 0; i < outputs.size(); ++i) put_tensor(f, "output:" + std::to_string(i), outputs[i]);
  for (const auto& kv : captured) put_tensor(f, kv.first, kv.second);
  if (!f) throw std::runtime_error("writing '" + output_path + "' failed");
}

}  // namespace qnnpy::kernel_tests
