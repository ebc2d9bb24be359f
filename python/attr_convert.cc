#include "python/attr_convert.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "pybind11/stl.h"

namespace py = pybind11;

namespace tandem {
namespace python {

absl::StatusOr<AttrValue> AttrFromPython(py::handle value, const std::string& what) {
  if (py::isinstance<py::bool_>(value)) return AttrValue(value.cast<bool>());
  if (py::isinstance<py::int_>(value)) return AttrValue(value.cast<int64_t>());
  if (py::isinstance<py::float_>(value)) return AttrValue(value.cast<double>());
  if (py::isinstance<py::str>(value)) return AttrValue(value.cast<std::string>());
  if (py::isinstance<DataType>(value)) return AttrValue(value.cast<DataType>());
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    py::sequence items = py::reinterpret_borrow<py::sequence>(value);
    bool ints = true, numbers = true, strings = true;
    for (py::handle item : items) {
      const bool is_int = py::isinstance<py::int_>(item) && !py::isinstance<py::bool_>(item);
      ints = ints && is_int;
      numbers = numbers && (is_int || py::isinstance<py::float_>(item));
      strings = strings && py::isinstance<py::str>(item);
    }
    if (ints) return AttrValue(items.cast<std::vector<int64_t>>());
    if (numbers) return AttrValue(items.cast<std::vector<double>>());
    if (strings) return AttrValue(items.cast<std::vector<std::string>>());
  }
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": ", py::repr(value).cast<std::string>(),
      " is not an attribute value (bool, int, float, str, a tandem dtype, or a list of ints, "
      "floats or strs)"));
}

py::object AttrToPython(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, DataType>) {
          return py::str(std::string(DataTypeName(v)));
        } else {
          return py::cast(v);
        }
      },
      value);
}

}  // namespace python
}  // namespace tandem
