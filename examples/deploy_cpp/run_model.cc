// Runs a kernels-form library written by qnnpy's KernelRunner.export_library from C++,
// with TVM's runtime and qnnpy's kernel library only (no Python).
//
//   run_model LIB.so INPUT.f32 N,C,H,W OUTPUT.f32
//
// INPUT.f32 holds the float32 NCHW input, OUTPUT.f32 receives the module's first
// output as raw float32 values. Build: see docs/deploy.md.
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
#include <sstream>
#include <string>
#include <vector>

namespace ffi = tvm::ffi;

namespace {

struct CpuAlloc {
  void AllocData(DLTensor* t) { t->data = std::malloc(ffi::GetDataSize(*t)); }
  void FreeData(DLTensor* t) { std::free(t->data); }
};

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> shape;
  std::stringstream in(text);
  for (std::string dim; std::getline(in, dim, ',');) shape.push_back(std::stoll(dim));
  return shape;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Relax's VM: load the executable from the library, then set up one CPU device with
// the pooled allocator (tvm.runtime.vm.VirtualMachine does the same).
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
  if (argc != 5) {
    std::cerr << "usage: " << argv[0] << " LIB.so INPUT.f32 N,C,H,W OUTPUT.f32\n";
    return 2;
  }
  try {
    const std::vector<int64_t> shape = parse_shape(argv[3]);
    ffi::Tensor x = ffi::Tensor::FromNDAlloc(CpuAlloc(), ffi::ShapeView(shape.data(), shape.size()),
                                             DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
    const std::string input = read_file(argv[2]);
    if (input.size() != ffi::GetDataSize(*x.GetDLTensorPtr())) {
      throw std::runtime_error(std::string(argv[2]) + " does not hold a float32 tensor of shape " + argv[3]);
    }
    std::memcpy(x.data_ptr(), input.data(), input.size());

    ffi::Tensor y = vm_main(argv[1])(x).cast<ffi::Tensor>();

    std::ofstream out(argv[4], std::ios::binary);
    out.write(static_cast<const char*>(y.data_ptr()), static_cast<std::streamsize>(ffi::GetDataSize(*y.GetDLTensorPtr())));
    std::cout << "output shape";
    for (int i = 0; i < y.ndim(); ++i) std::cout << ' ' << y.shape()[i];
    std::cout << '\n';
    return out ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "run_model: " << e.what() << '\n';
    return 1;
  }
}
