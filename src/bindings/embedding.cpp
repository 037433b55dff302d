// Embedding lookups: the embedding / embedding_bag / float_embedding node builder.
#include "bindings/bindings.h"
#include "bindings/numpy_views.h"
#include "layer_import/embedding_node.h"

namespace qnnpy::bindings {

void bind_embedding(py::module_& m) {
  m.def(
      "add_embedding",
      [](Graph& g, const std::string& op, const std::vector<int>& inputs, const std::string& source, const std::string& name,
         const py::array& weight, std::optional<FloatArray> row_scale, std::optional<FloatArray> row_zero_point,
         const std::map<std::string, std::vector<int64_t>>& ints, const Shape& expected_shape) {
        const bool is_float = py::isinstance<py::array_t<float>>(weight);
        if (!is_float && !py::isinstance<py::array_t<uint8_t>>(weight)) {
          throw std::invalid_argument(op + " (" + source + "): the table must be a uint8 or float32 array, got " +
                                      std::string(py::str(weight.dtype())));
        }
        const py::array table = is_float ? py::array(FloatArray::ensure(weight))
                                         : py::array(py::array_t<uint8_t, py::array::c_style>::ensure(weight));
        EmbeddingTable t;
        t.dtype = is_float ? DType::Float32 : DType::UInt8;
        t.data = table.data();
        t.shape = shape_of(table);
        const int64_t rows = t.shape.empty() ? 0 : t.shape[0];
        for (const auto* q : {&row_scale, &row_zero_point}) {
          if (*q && static_cast<int64_t>((*q)->size()) != rows) {
            throw std::invalid_argument(op + " (" + source + "): " + std::to_string((*q)->size()) +
                                        " per-row qparams for a table of " + std::to_string(rows) + " rows");
          }
        }
        t.row_scale = row_scale ? row_scale->data() : nullptr;
        t.row_zero_point = row_zero_point ? row_zero_point->data() : nullptr;
        return add_embedding_node(g, op, inputs, source, name, t, ints, expected_shape);
      },
      py::arg("graph"), py::arg("op"), py::arg("inputs"), py::arg("source"), py::arg("name"), py::arg("weight"),
      py::arg("row_scale") = py::none(), py::arg("row_zero_point") = py::none(),
      py::arg("ints") = std::map<std::string, std::vector<int64_t>>{}, py::arg("expected_shape") = Shape{},
      "Adds an embedding node: a uint8 table with float32 per-row scale and zero point (embedding, embedding_bag) or a "
      "float32 table (float_embedding); indices first among the inputs. Returns the output id.");
}

}  // namespace qnnpy::bindings
