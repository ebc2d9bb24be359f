// tandem._C.Tensor (PyTensor): shape, dtype, place, numpy views through the
// buffer protocol, __dlpack__, and from_dlpack / to_tensor.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "python/status.h"
#include "python/tensor_bridge.h"

namespace py = pybind11;

namespace tandem {
namespace python {
namespace {

const char* BufferFormat(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "f";
    case DataType::kFloat64:
      return "d";
    case DataType::kInt32:
      return "i";
    case DataType::kInt64:
      return "l";
    case DataType::kBool:
      return "?";
    case DataType::kFloat16:
      return "e";
    case DataType::kBFloat16:
      break;  // no buffer format: NoBufferReason
  }
  return "B";
}

// Why `t` has no buffer to export; "" when it has one.
std::string NoBufferReason(const Tensor& t) {
  if (!t.initialized()) return "an uninitialized tensor has no buffer";
  if (t.dtype() == DataType::kBFloat16) {
    return "a bfloat16 tensor has no buffer format; use .numpy() (with the ml_dtypes package)";
  }
  if (!t.place().is_host()) {
    return absl::StrCat("a tensor on ", t.place().ToString(),
                        " has no host buffer; use .numpy() to copy it");
  }
  return "";
}

py::buffer_info HostBuffer(PyTensor& t) {
  const Tensor& x = t.tensor;  // GetBuffer checked NoBufferReason
  std::vector<ssize_t> shape(x.shape().dims().begin(), x.shape().dims().end());
  std::vector<ssize_t> strides(shape.size());
  ssize_t stride = static_cast<ssize_t>(SizeOf(x.dtype()));
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::buffer_info(x.raw_data(), static_cast<ssize_t>(SizeOf(x.dtype())),
                         BufferFormat(x.dtype()), static_cast<ssize_t>(shape.size()), shape,
                         strides, /*readonly=*/false);
}

// pybind11's bf_getbuffer, wrapped: it cannot report an error from
// def_buffer's function (an exception there terminates), so the reasons a
// tensor has no buffer are raised as BufferError here first.
getbufferproc g_pybind_getbuffer = nullptr;

int GetBuffer(PyObject* obj, Py_buffer* view, int flags) {
  const std::string reason = NoBufferReason(py::handle(obj).cast<const PyTensor&>().tensor);
  if (!reason.empty()) {
    PyErr_SetString(PyExc_BufferError, reason.c_str());
    return -1;
  }
  return g_pybind_getbuffer(obj, view, flags);
}

}  // namespace

void RegisterTensor(py::module_& m) {
  py::class_<PyTensor> tensor(
      m, "Tensor", py::buffer_protocol(),
      "A Tandem tensor: np.asarray(t) views a host tensor without copying.");
  tensor.def_buffer(&HostBuffer);
  auto* type = reinterpret_cast<PyTypeObject*>(tensor.ptr());
  g_pybind_getbuffer = type->tp_as_buffer->bf_getbuffer;
  type->tp_as_buffer->bf_getbuffer = &GetBuffer;
  tensor
      .def_property_readonly("shape",
                             [](const PyTensor& t) {
                               return std::vector<int64_t>(t.tensor.shape().dims().begin(),
                                                           t.tensor.shape().dims().end());
                             })
      .def_property_readonly(
          "dtype", [](const PyTensor& t) { return std::string(DataTypeName(t.tensor.dtype())); })
      .def_property_readonly("place", [](const PyTensor& t) { return t.tensor.place(); })
      .def("is_initialized", [](const PyTensor& t) { return t.tensor.initialized(); })
      .def("data_ptr",
           [](const PyTensor& t) { return reinterpret_cast<uintptr_t>(t.tensor.raw_data()); })
      .def(
          "numpy", [](const PyTensor& t) { return TensorToNumpy(t.tensor, /*share=*/true); },
          "A numpy view of a host tensor; a copy of a device tensor.")
      .def(
          "__array__",
          [](const PyTensor& t, py::object dtype, py::object copy) {
            py::object a = TensorToNumpy(t.tensor, !(copy && copy.cast<bool>()));
            return dtype.is_none() ? a : a.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def(
          "__dlpack__",
          [](const PyTensor& t, py::object stream, py::kwargs) {
            // Tandem's runs end with their devices synchronised, so the data
            // is ready on any consumer stream.
            return ValueOrThrow(ToDlpack(t.tensor));
          },
          py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const PyTensor& t) { return ValueOrThrow(DlpackDevice(t.tensor)); })
      .def(
          "to",
          [](const PyTensor& t, const Place& place) {
            return PyTensor{ValueOrThrow(CopyTo(t.tensor, place))};
          },
          "A copy on `place`.", py::arg("place"))
      .def(
          "set",
          [](PyTensor& t, py::handle value, std::optional<Place> place) {
            std::optional<DataType> dtype;  // an initialised tensor keeps its dtype
            if (t.tensor.initialized()) dtype = t.tensor.dtype();
            Tensor v = ValueOrThrow(TensorFromPython(value, dtype, "Tensor.set's value", true));
            Place target = place.value_or(t.tensor.initialized() ? t.tensor.place() : CPUPlace());
            Tensor copy = ValueOrThrow(CopyTo(v, target));
            if (t.owner != nullptr) t.owner->set(copy);
            t.tensor = copy;
          },
          "Replaces the value by a copy of `value` on `place` (default: the current place); "
          "a tensor from Scope.find_var(...).get_tensor() sets the scope's variable.",
          py::arg("value"), py::arg("place") = py::none())
      .def("__repr__", [](const PyTensor& t) {
        if (!t.tensor.initialized()) return std::string("Tensor(uninitialized)");
        return absl::StrCat("Tensor(", DataTypeName(t.tensor.dtype()), t.tensor.shape().ToString(),
                            ", place=", t.tensor.place().LogName(), ")");
      });
  m.def(
      "from_dlpack", [](py::handle obj) { return PyTensor{ValueOrThrow(FromDlpack(obj))}; },
      "A tensor sharing the memory of an object with __dlpack__ (numpy, PyTorch, JAX) or of a "
      "DLPack capsule.",
      py::arg("x"));
  m.def(
      "to_tensor",
      [](py::handle obj, std::optional<std::string> dtype, std::optional<Place> place) {
        std::optional<DataType> want;
        if (dtype.has_value()) want = ValueOrThrow(ParseDataType(*dtype));
        Tensor t = ValueOrThrow(TensorFromPython(obj, want, "to_tensor's value", true));
        if (place.has_value() && !(t.place() == *place)) t = ValueOrThrow(CopyTo(t, *place));
        return PyTensor{t};
      },
      "A tensor of `value`: sharing a suitable host buffer, else a copy; on `place` if given "
      "(a copy).",
      py::arg("value"), py::arg("dtype") = py::none(), py::arg("place") = py::none());
}

}  // namespace python
}  // namespace tandem
