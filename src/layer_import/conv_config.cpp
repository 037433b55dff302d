#include "layer_import/conv_config.h"

#include <stdexcept>
#include <string>

namespace qnnpy {

ConvConfig decode_conv_config(int version, const std::vector<int64_t>& config) {
  auto fail = [&](const std::string& msg) {
    throw std::invalid_argument("conv packed params (state version " + std::to_string(version) + "): " + msg);
  };
  if (version != 2 && version != 3) fail("unsupported state version; qnnpy reads versions 2 and 3");
  if (config.empty()) fail("empty configuration");
  ConvConfig c;
  int64_t dims = config[0];
  if (dims < 1 || dims > 3) fail("spatial dimension count must be 1, 2 or 3, got " + std::to_string(dims));
  c.spatial_dims = static_cast<int>(dims);
  size_t expected = 1 + 4 * static_cast<size_t>(dims) + 2;
  if (config.size() != expected) {
    fail("configuration holds " + std::to_string(config.size()) + " values, expected " + std::to_string(expected) +
         " for " + std::to_string(dims) + " spatial dims");
  }
  size_t at = 1;
  auto take = [&](std::vector<int64_t>& field, const char* name, int64_t minimum) {
    for (int64_t i = 0; i < dims; ++i) {
      int64_t v = config[at++];
      if (v < minimum) fail(std::string(name) + " must be >= " + std::to_string(minimum) + ", got " + std::to_string(v));
      field.push_back(v);
    }
  };
  take(c.stride, "stride", 1);
  take(c.padding, "padding", 0);
  take(c.dilation, "dilation", 1);
  take(c.output_padding, "output_padding", 0);
  c.groups = config[at++];
  if (c.groups < 1) fail("groups must be >= 1, got " + std::to_string(c.groups));
  int64_t flags = config[at++];
  if (flags & ~int64_t{1}) fail("unknown flag bits set in " + std::to_string(flags));
  c.transpose = (flags & 1) != 0;
  if (!c.transpose) {
    for (int64_t v : c.output_padding) {
      if (v != 0) fail("output_padding " + std::to_string(v) + " on a non-transposed conv");
    }
  }
  return c;
}

}  // namespace qnnpy
