#include "bindings/bindings.h"
#include "bindings/numpy_views.h"
#include "layer_import/conv_config.h"
#include "layer_import/layer_params.h"

namespace qnnpy::bindings {

void bind_params(py::module_& m) {
  m.def(
      "decode_conv_config",
      [](int version, const IntArray& config) {
        ConvConfig c = decode_conv_config(version, to_vector<int64_t>(config));
        py::dict d;
        d["spatial_dims"] = c.spatial_dims;
        d["stride"] = c.stride;
        d["padding"] = c.padding;
        d["dilation"] = c.dilation;
        d["output_padding"] = c.output_padding;
        d["groups"] = c.groups;
        d["transpose"] = c.transpose;
        return d;
      },
      py::arg("version"), py::arg("config"),
      "Decode the configuration vector of a conv packed-params state (versions 2 and 3).");

  m.def("bias_scale", &bias_scale, py::arg("input_scale"), py::arg("weight_scale"));
  m.def(
      "quantize_bias",
      [](float bias, float scale) {
        bool saturated = false;
        int32_t q = quantize_bias(bias, scale, &saturated);
        return py::make_tuple(q, saturated);
      },
      py::arg("bias"), py::arg("scale"));
}

}  // namespace qnnpy::bindings
