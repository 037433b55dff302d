// Bindings of the fixed_point profile's arithmetic: quantize_multiplier, fixed_point_requantize
// and the requantize_fixed_point kernel entry (docstrings in fixed_point.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace qnnpy {

void bind_fixed_point(pybind11::module_& m);

}  // namespace qnnpy
