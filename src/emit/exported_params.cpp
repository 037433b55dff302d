#include "emit/exported_params.h"

namespace qnnpy {

bool has_nonzero_zero_point(const QParams& q) {
  for (int32_t z : q.zero_point) if (z != 0) return true;
  return false;
}

std::vector<ExportedParam> exported_params(const Graph& g) {
  std::vector<ExportedParam> out;
  for (const Param& p : g.params()) {
    if (!p.exported) continue;
    p.check_values();
    out.push_back({p.name, p.dtype, p.shape, p.bytes.data(), p.bytes.buffer()});
    if (!p.q.per_channel()) continue;
    Shape channels{static_cast<int64_t>(p.q.scale.size())};
    out.push_back({p.name + "_scale", DType::Float32, channels, reinterpret_cast<const uint8_t*>(p.q.scale.data()), nullptr});
    if (has_nonzero_zero_point(p.q)) {
      out.push_back({p.name + "_zero_point", DType::Int32, channels,
                     reinterpret_cast<const uint8_t*>(p.q.zero_point.data()), nullptr});
    }
  }
  return out;
}

}  // namespace qnnpy
