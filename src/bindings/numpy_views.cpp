#include "bindings/numpy_views.h"

#include <cstring>

namespace qnnpy::bindings {
namespace {

py::dtype numpy_dtype(DType t) { return py::dtype(dtype_name(t)); }

}  // namespace

Shape shape_of(const py::array& a) { return Shape(a.shape(), a.shape() + a.ndim()); }

FloatSpan span_of(const FloatArray& a) { return {a.data(), static_cast<int64_t>(a.size())}; }

QParams make_qparams(const FloatArray& scale, const IntArray& zero_point, int axis) {
  QParams q;
  q.scale = to_vector<float>(scale);
  q.zero_point = to_vector<int32_t>(zero_point);
  q.axis = axis;
  return q;
}

Value make_output(const std::string& name, const std::string& dtype, std::optional<float> scale, std::optional<int> zero_point) {
  Value v;
  v.name = name;
  v.dtype = dtype_from_name(dtype);
  if (scale) v.q.scale = {*scale};
  if (zero_point) v.q.zero_point = {*zero_point};
  return v;
}

py::array param_view(const ExportedParam& p, py::handle owner) {
  std::vector<py::ssize_t> strides;
  py::ssize_t stride = static_cast<py::ssize_t>(dtype_size(p.dtype));
  for (auto it = p.shape.rbegin(); it != p.shape.rend(); ++it) {
    strides.insert(strides.begin(), stride);
    stride *= *it;
  }
  // The view keeps the graph (`owner`, which holds the qparams' arrays) and the param's own buffer alive.
  using Hold = std::pair<py::object, std::shared_ptr<const std::vector<uint8_t>>>;
  py::capsule base(new Hold(py::reinterpret_borrow<py::object>(owner), p.buffer),
                   [](void* hold) { delete static_cast<Hold*>(hold); });
  py::array a(numpy_dtype(p.dtype), std::vector<py::ssize_t>(p.shape.begin(), p.shape.end()), strides, p.bytes, base);
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

py::array host_to_numpy(const HostTensor& t) {
  py::array a(numpy_dtype(t.dtype), std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
  std::memcpy(a.mutable_data(), t.bytes.data(), t.bytes.size());
  return a;
}

}  // namespace qnnpy::bindings
