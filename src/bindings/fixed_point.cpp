// Python bindings of the fixed_point profile's arithmetic (kernels/fixed_point.h), so that
// other lowerings (the TVM integer pass) use the very same multipliers and formula.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "bindings/bindings.h"
#include "kernels/fixed_point.h"
#include "kernels/kernels.h"

namespace py = pybind11;

namespace qnnpy::bindings {
namespace {

using Int32Array = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

const char* kQuantizeMultiplierDoc = R"(TFLite's QuantizeMultiplier: (multiplier, shift) with m ~= multiplier * 2**(shift - 31).

frexp(m) = q * 2**shift with 0.5 <= q < 1; multiplier = round(q * 2**31), ties away from zero;
a multiplier of 2**31 becomes 2**30 with shift + 1; shift < -31 gives (0, 0); m = 0 gives (0, 0).
So multiplier is in [2**30, 2**31) or 0, and shift in [-31, 30]. The fixed_point profile passes
m = float64(s_x) * float64(s_w[c]) / float64(s_y) for a conv/linear output channel c.
Raises ValueError for a negative, NaN or infinite m and for m >= about 2**30 (shift > 30).)";

const char* kRequantizeDoc = R"(MultiplyByQuantizedMultiplier(acc, multiplier, shift) per element (scalar code).

TFLite's double-rounding variant, in int64 arithmetic (>> is an arithmetic shift, i.e. floor):
  left = max(shift, 0); right = max(-shift, 0)
  a = acc * 2**left, wrapped to int32 (two's complement)
  h = (a * multiplier + 2**30) >> 31, except a == multiplier == -2**31: h = 2**31 - 1
  y = (h + 2**(right - 1) - (1 if h < 0 else 0)) >> right   when right > 0, else y = h
(h rounds ties toward +infinity, y rounds ties away from zero.) A conv/linear output of the
fixed_point profile is clip(y + zero_point, lo, hi) with acc = sum (x - zx)(w - zw) + bias_q,
lo = zero_point under a fused ReLU.)";

const char* kRequantizeKernelDoc = R"(The runtime's requantization kernel (isa 'scalar', 'avx2', 'avx512vnni', 'neon' or 'neon_dot') on acc (rows x n int32)
under the fixed_point profile: clip(MultiplyByQuantizedMultiplier(acc + bias[j], multiplier[j],
shift[j]) + zero_point, lo, hi) (acc + bias wraps in int32). Returns int8 when lo < 0, else uint8.)";

QuantizedMultiplier checked_quantize_multiplier(double m) {
  try {
    return quantize_multiplier(m);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(std::string("quantize_multiplier: ") + e.what());
  }
}

void check_shift(int shift, const char* where) {
  if (shift < -31 || shift > 30) {
    throw py::value_error(std::string(where) + ": shift must be in [-31, 30], got " + std::to_string(shift));
  }
}

py::array run_requantize_kernel(const Int32Array& acc, const Int32Array& bias, const Int32Array& multiplier,
                                const Int32Array& shift, int zero_point, int lo, int hi, const std::string& isa) {
  const char* where = "requantize_fixed_point";
  if (acc.ndim() != 2) throw py::value_error(std::string(where) + ": acc must be 2-D (rows, channels)");
  const int64_t rows = acc.shape(0), n = acc.shape(1);
  for (const Int32Array* a : {&bias, &multiplier, &shift}) {
    if (a->ndim() != 1 || a->shape(0) != n) {
      throw py::value_error(std::string(where) + ": bias, multiplier and shift must have " + std::to_string(n) +
                            " values (one per channel)");
    }
  }
  for (int64_t j = 0; j < n; ++j) check_shift(shift.data()[j], where);
  if (!(lo <= hi && lo >= -128 && hi <= 255 && (lo >= 0 || hi <= 127))) {
    throw py::value_error(std::string(where) + ": [lo, hi] = [" + std::to_string(lo) + ", " + std::to_string(hi) +
                          "] is not within int8 or uint8");
  }
  const RequantParams p{bias.data(), nullptr, nullptr, zero_point, lo, hi, multiplier.data(), shift.data()};
  const bool is_signed = lo < 0;
  py::array out(py::dtype(is_signed ? "int8" : "uint8"), std::vector<py::ssize_t>{rows, n});
  kernel_set(parse_isa(isa)).requantize(acc.data(), rows, n, n, p, static_cast<uint8_t*>(out.mutable_data()), n);
  return out;
}

}  // namespace

void bind_fixed_point(py::module_& m) {
  m.def(
      "quantize_multiplier",
      [](double real) {
        const QuantizedMultiplier q = checked_quantize_multiplier(real);
        return py::make_tuple(q.multiplier, q.shift);
      },
      py::arg("m"), kQuantizeMultiplierDoc);
  m.def(
      "fixed_point_requantize",
      [](const Int32Array& acc, int32_t multiplier, int shift) {
        check_shift(shift, "fixed_point_requantize");
        Int32Array out(std::vector<py::ssize_t>(acc.shape(), acc.shape() + acc.ndim()));
        const int32_t* in = acc.data();
        int32_t* dst = out.mutable_data();
        for (py::ssize_t i = 0; i < acc.size(); ++i) dst[i] = multiply_by_quantized_multiplier(in[i], multiplier, shift);
        return out;
      },
      py::arg("acc"), py::arg("multiplier"), py::arg("shift"), kRequantizeDoc);
  m.def("requantize_fixed_point", &run_requantize_kernel, py::arg("acc"), py::arg("bias"), py::arg("multiplier"),
        py::arg("shift"), py::arg("zero_point"), py::arg("lo"), py::arg("hi"), py::arg("isa"), kRequantizeKernelDoc);
}

}  // namespace qnnpy::bindings
