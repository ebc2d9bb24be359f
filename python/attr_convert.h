// Op attributes between Python values and AttrValue.
//
//   AttrValue v = AttrFromPython(py::int_(3));   // int64_t 3
//   py::object o = AttrToPython(v);              // 3
//
// bool -> bool, int -> int64, float -> double, str -> string,
// tandem._C.DataType -> DataType, lists of one of int, float or str ->
// the vector types (an empty list is an empty int list). Anything else is
// InvalidArgument naming `what`. Needs the GIL.
#ifndef TANDEM_PYTHON_ATTR_CONVERT_H_
#define TANDEM_PYTHON_ATTR_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "framework/op/attr.h"
#include "pybind11/pybind11.h"

namespace tandem {
namespace python {

absl::StatusOr<AttrValue> AttrFromPython(pybind11::handle value, const std::string& what);
pybind11::object AttrToPython(const AttrValue& value);

}  // namespace python
}  // namespace tandem

#endif  // TANDEM_PYTHON_ATTR_CONVERT_H_
