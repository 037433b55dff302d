// Runs a Relax library written by qnnpy (any form: kernels, integer, qdq) with TVM's runtime only (no
// Python): the runner of the deploy folders `qnnpy build --target aarch64-linux-gnu` writes, and the C++
// example of docs/deploy.md.
//
//   run_model [--threads N] LIB.so INPUT.npy [INPUT.npy ...] OUTPUT.npy
//
// The inputs are .npy files in the module's input order (dtype and shape as the module declares them; C
// order). The first output goes to OUTPUT.npy; a module with several outputs writes OUTPUT.npy, then
// OUTPUT.1.npy, OUTPUT.2.npy ... --threads sets TVM's thread pool (TVM_NUM_THREADS) and, in the kernels
// form, qnnpy's kernel threads (default: TVM's default, one kernel thread).
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ffi = tvm::ffi;

namespace {

struct CpuAlloc {
  void AllocData(DLTensor* t) { t->data = std::malloc(ffi::GetDataSize(*t)); }
  void FreeData(DLTensor* t) { std::free(t->data); }
};

// The .npy element types the runner reads and writes (little-endian; '|' for one byte).
struct NpyType {
  const char* descr;
  DLDataType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"<f4", {kDLFloat, 32, 1}}, {"<f8", {kDLFloat, 64, 1}}, {"<f2", {kDLFloat, 16, 1}},
    {"|i1", {kDLInt, 8, 1}},    {"|u1", {kDLUInt, 8, 1}},   {"<i2", {kDLInt, 16, 1}},
    {"<u2", {kDLUInt, 16, 1}},  {"<i4", {kDLInt, 32, 1}},   {"<u4", {kDLUInt, 32, 1}},
    {"<i8", {kDLInt, 64, 1}},   {"<u8", {kDLUInt, 64, 1}},  {"|b1", {kDLBool, 8, 1}},
};

bool same_type(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The value of `key` in the header dict of a .npy file: "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }".
std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::size_t at = header.find("'" + key + "':");
  if (at == std::string::npos) throw std::runtime_error(path + ": the .npy header has no '" + key + "'");
  std::size_t begin = header.find_first_not_of(' ', at + key.size() + 3);
  std::size_t end = header[begin] == '(' ? header.find(')', begin) + 1
                    : header[begin] == '\'' ? header.find('\'', begin + 1) + 1
                                            : header.find_first_of(",}", begin);
  return header.substr(begin, end - begin);
}

// A C-order .npy file (format versions 1 to 3) as a tensor.
ffi::Tensor read_npy(const std::string& path) {
  const std::string data = read_file(path);
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + " is not a .npy file");
  const int major = static_cast<unsigned char>(data[6]);
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  std::size_t header_length = 0;
  for (std::size_t i = 0; i < length_bytes; ++i) header_length |= std::size_t(static_cast<unsigned char>(data[8 + i])) << (8 * i);
  const std::size_t start = 8 + length_bytes + header_length;
  if (start > data.size()) throw std::runtime_error(path + ": truncated .npy header");
  const std::string header = data.substr(8 + length_bytes, header_length);
  if (header_value(header, "fortran_order", path) != "False") throw std::runtime_error(path + ": Fortran order is not supported; save a C-order array");
  const std::string descr = header_value(header, "descr", path);
  std::optional<DLDataType> dtype;
  for (const NpyType& t : kNpyTypes) {
    if (descr == "'" + std::string(t.descr) + "'") dtype = t.dtype;
  }
  if (!dtype) throw std::runtime_error(path + ": element type " + descr + " is not supported");
  std::vector<int64_t> shape;
  std::stringstream dims(header_value(header, "shape", path).substr(1));
  for (std::string dim; std::getline(dims, dim, ',');) {
    if (dim.find_first_of("0123456789") != std::string::npos) shape.push_back(std::stoll(dim));
  }
  ffi::Tensor x = ffi::Tensor::FromNDAlloc(CpuAlloc(), ffi::ShapeView(shape.data(), shape.size()), *dtype, DLDevice{kDLCPU, 0});
  const std::size_t bytes = ffi::GetDataSize(*x.GetDLTensorPtr());
  if (data.size() - start != bytes) throw std::runtime_error(path + ": the data does not match the header's shape and type");
  std::memcpy(x.data_ptr(), data.data() + start, bytes);
  return x;
}

void write_npy(const std::string& path, const ffi::Tensor& y) {
  const char* descr = nullptr;
  for (const NpyType& t : kNpyTypes) {
    if (same_type(t.dtype, y.dtype())) descr = t.descr;
  }
  if (descr == nullptr) throw std::runtime_error("the output's element type has no .npy form here");
  std::string shape;
  for (int i = 0; i < y.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(y.shape()[i]);
  if (y.ndim() == 1) shape += ",";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ').push_back('\n');  // the data starts 64-byte aligned
  std::ofstream out(path, std::ios::binary);
  const uint16_t length = static_cast<uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  const char length_bytes[2] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  out.write(length_bytes, 2);
  out << header;
  out.write(static_cast<const char*>(y.data_ptr()), static_cast<std::streamsize>(ffi::GetDataSize(*y.GetDLTensorPtr())));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// OUTPUT.npy for output 0, OUTPUT.k.npy for output k.
std::string output_path(const std::string& first, std::size_t k) {
  if (k == 0) return first;
  const std::string stem = first.size() > 4 && first.compare(first.size() - 4, 4, ".npy") == 0 ? first.substr(0, first.size() - 4) : first;
  return stem + "." + std::to_string(k) + ".npy";
}

// Relax's VM: load the executable from the library, then set up one CPU device with the pooled allocator
// (tvm.runtime.vm.VirtualMachine does the same).
ffi::Function vm_main(const std::string& library) {
  // An absolute path: dlopen searches the library path for names without a slash.
  ffi::Module lib = ffi::Module::LoadFromFile(std::filesystem::absolute(library).string());
  ffi::Module vm = lib->GetFunction("vm_load_executable").value()().cast<ffi::Module>();
  constexpr int kPooledAllocator = 2;
  vm->GetFunction("vm_initialization").value()(static_cast<int>(kDLCPU), 0, kPooledAllocator);
  return vm->GetFunction("main").value();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<int> threads;
  if (args.size() >= 2 && args[0] == "--threads") {
    threads = std::stoi(args[1]);
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() < 3) {
    std::cerr << "usage: " << argv[0] << " [--threads N] LIB.so INPUT.npy [INPUT.npy ...] OUTPUT.npy\n";
    return 2;
  }
  try {
    if (threads) setenv("TVM_NUM_THREADS", std::to_string(*threads).c_str(), 1);  // read when TVM's pool starts
    std::vector<ffi::Any> inputs;
    for (std::size_t i = 1; i + 1 < args.size(); ++i) inputs.emplace_back(read_npy(args[i]));
    ffi::Function main_function = vm_main(args[0]);
    if (threads) {
      if (auto set = ffi::Function::GetGlobal("qnnpy.kernels.set_num_threads")) (*set)(*threads);
    }
    std::vector<ffi::AnyView> views(inputs.begin(), inputs.end());
    ffi::Any result;
    main_function.CallPacked(views.data(), static_cast<int32_t>(views.size()), &result);

    std::vector<ffi::Tensor> outputs;
    if (auto tensor = result.try_cast<ffi::Tensor>()) {
      outputs.push_back(*tensor);
    } else {
      for (const ffi::Any& item : result.cast<ffi::Array<ffi::Any>>()) outputs.push_back(item.cast<ffi::Tensor>());
    }
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      write_npy(output_path(args.back(), k), outputs[k]);
      std::cout << output_path(args.back(), k) << ": shape (";
      for (int i = 0; i < outputs[k].ndim(); ++i) std::cout << (i ? ", " : "") << outputs[k].shape()[i];
      std::cout << ")\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "run_model: " << e.what() << '\n';
    return 1;
  }
}
