#include "python/status.h"

#include <map>

#include "absl/strings/string_view.h"

namespace py = pybind11;

namespace tandem {
namespace python {
namespace {

// Code name ("INVALID_ARGUMENT") -> Python class; "" is the fallback.
// Written once at import, under the GIL; read under the GIL.
std::map<std::string, py::object>& ErrorClasses() {
  static auto* classes = new std::map<std::string, py::object>();
  return *classes;
}

std::string CodeName(absl::StatusCode code) {
  std::string name = absl::StatusCodeToString(code);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;  // "INVALID_ARGUMENT"
}

void RaiseStatus(const absl::Status& status) {
  const std::string code = CodeName(status.code());
  auto& classes = ErrorClasses();
  auto it = classes.find(code);
  if (it == classes.end()) it = classes.find("");
  const std::string message(status.message());
  if (it == classes.end()) {  // tandem/errors.py not imported: still a clear error
    PyErr_SetString(PyExc_RuntimeError, status.ToString().c_str());
    return;
  }
  py::object error = it->second(message);
  error.attr("code") = code;
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
}

}  // namespace

void RegisterStatusErrors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      RaiseStatus(e.status());
    }
  });
  m.def(
      "_set_error_classes",
      [](const py::dict& classes) {
        auto& table = ErrorClasses();
        table.clear();
        for (auto [code, cls] : classes) {
          table[code.cast<std::string>()] = py::reinterpret_borrow<py::object>(cls);
        }
      },
      "Internal: the Python exception class of each status code (tandem/errors.py).");
  m.def(
      "_raise_status",
      [](const std::string& code, const std::string& message) {
        for (int c = 0; c <= 16; ++c) {
          if (CodeName(static_cast<absl::StatusCode>(c)) == code) {
            throw StatusError(absl::Status(static_cast<absl::StatusCode>(c), message));
          }
        }
        throw py::value_error("no status code '" + code + "'");
      },
      "Testing: raises the exception a C++ status with `code` and `message` becomes.");
}

}  // namespace python
}  // namespace tandem
