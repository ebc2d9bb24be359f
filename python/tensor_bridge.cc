#include "python/tensor_bridge.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dlpack/dlpack.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "pybind11/stl.h"
#include "python/external_memory.h"
#include "python/status.h"

namespace py = pybind11;

namespace tandem {
namespace python {
namespace {

// DLPack 0.8's kDLBool; Debian's dlpack.h (0.6) predates it.
constexpr uint8_t kDLBoolCode = 6;

bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// Runs `fn` holding the GIL, from any thread; skipped while the interpreter
// shuts down (the memory is then the process's to reclaim).
template <typename Fn>
void WithGil(Fn&& fn) {
  if (!Py_IsInitialized() || Finalizing()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  fn();
  PyGILState_Release(state);
}

// The dtype of a buffer-protocol format ("f", "<d", "=q", "?"), if Tandem has it.
std::optional<DataType> DataTypeOfFormat(const char* format, ssize_t itemsize) {
  if (format == nullptr) return std::nullopt;
  if (*format == '@' || *format == '=' || *format == '<') ++format;
  if (format[0] == '\0' || format[1] != '\0') return std::nullopt;
  switch (format[0]) {
    case 'f':
      return itemsize == 4 ? std::optional(DataType::kFloat32) : std::nullopt;
    case 'd':
      return itemsize == 8 ? std::optional(DataType::kFloat64) : std::nullopt;
    case 'e':
      return itemsize == 2 ? std::optional(DataType::kFloat16) : std::nullopt;
    case '?':
      return itemsize == 1 ? std::optional(DataType::kBool) : std::nullopt;
    case 'i':
    case 'l':
    case 'q':
      if (itemsize == 4) return DataType::kInt32;
      if (itemsize == 8) return DataType::kInt64;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// "uint8" for a numpy array, else the buffer's format ("format 'B'").
std::string DescribeElementType(py::handle obj, const char* format) {
  if (py::hasattr(obj, "dtype")) return py::str(obj.attr("dtype")).cast<std::string>();
  return absl::StrCat("format '", format == nullptr ? "B" : format, "'");
}

absl::Status DtypeMismatch(const std::string& what, const std::string& found, DataType want) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " holds ", found, " but ", DataTypeName(want),
                   " is wanted (convert it, e.g. with .astype(\"", DataTypeName(want), "\"))"));
}

absl::StatusOr<Tensor> CopyOfHostMemory(const void* data, DataType dtype, const Shape& shape) {
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator::Default(), dtype, shape));
  if (t.NumBytes() > 0) std::memcpy(t.raw_data(), data, t.NumBytes());
  return t;
}

// numpy has no bfloat16 of its own: the ml_dtypes package (which JAX and
// TensorFlow install) provides it. Python's buffer protocol has no format
// for it either, so bfloat16 arrays cross as copies of their bits.
constexpr char kNoMlDtypes[] =
    "bfloat16 arrays need the ml_dtypes package (pip install ml_dtypes); or cast the tensor to "
    "float32 first";

bool IsBFloat16Array(py::handle obj) {
  return py::hasattr(obj, "dtype") && py::hasattr(obj, "view") &&
         py::str(obj.attr("dtype")).cast<std::string>() == "bfloat16";
}

// A Tandem bfloat16 tensor with the bits of the numpy bfloat16 array `obj`.
absl::StatusOr<Tensor> TensorOfBFloat16Array(py::handle obj) {
  py::module_ numpy = py::module_::import("numpy");
  py::object bits = numpy.attr("ascontiguousarray")(obj).attr("view")(numpy.attr("uint16"));
  std::vector<int64_t> dims = bits.attr("shape").cast<std::vector<int64_t>>();
  const uintptr_t data = bits.attr("ctypes").attr("data").cast<uintptr_t>();
  return CopyOfHostMemory(reinterpret_cast<const void*>(data), DataType::kBFloat16,
                          Shape(absl::MakeConstSpan(dims)));
}

// `array` (C-contiguous float32) rounded to a new bfloat16 tensor.
absl::StatusOr<Tensor> BFloat16OfFloatArray(py::handle array) {
  std::vector<int64_t> dims = array.attr("shape").cast<std::vector<int64_t>>();
  const auto* values =
      reinterpret_cast<const float*>(array.attr("ctypes").attr("data").cast<uintptr_t>());
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator::Default(), DataType::kBFloat16,
                                              Shape(absl::MakeConstSpan(dims))));
  bfloat16* out = t.data<bfloat16>();
  for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = bfloat16(values[i]);
  return t;
}

// A numpy array of ml_dtypes.bfloat16 holding a copy of the host tensor `t`.
py::object BFloat16ArrayOf(const Tensor& t) {
  py::object bfloat16;
  try {
    bfloat16 = py::module_::import("ml_dtypes").attr("bfloat16");
  } catch (py::error_already_set&) {
    throw StatusError(absl::FailedPreconditionError(kNoMlDtypes));
  }
  py::module_ numpy = py::module_::import("numpy");
  std::vector<int64_t> dims(t.shape().dims().begin(), t.shape().dims().end());
  py::object array = numpy.attr("empty")(py::cast(dims), bfloat16);
  const uintptr_t data = array.attr("ctypes").attr("data").cast<uintptr_t>();
  if (t.NumBytes() > 0) std::memcpy(reinterpret_cast<void*>(data), t.raw_data(), t.NumBytes());
  return array;
}

// nullopt when `obj` has no C-contiguous buffer (the caller converts it).
std::optional<absl::StatusOr<Tensor>> TensorFromBuffer(py::handle obj, std::optional<DataType> want,
                                                       const std::string& what) {
  auto* view = new Py_buffer;
  if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    delete view;
    return std::nullopt;
  }
  auto release = [view] {
    WithGil([view] { PyBuffer_Release(view); });
    delete view;
  };
  std::optional<DataType> dtype = DataTypeOfFormat(view->format, view->itemsize);
  if (!dtype.has_value() || (want.has_value() && *dtype != *want)) {
    const std::string found = DescribeElementType(obj, view->format);
    PyBuffer_Release(view);
    delete view;
    if (!want.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " holds ", found,
                       ", which Tandem has no dtype for (float32, float64, int32, int64, bool, "
                       "bfloat16, float16)"));
    }
    return DtypeMismatch(what, found, *want);
  }
  std::vector<int64_t> dims(view->shape, view->shape + view->ndim);
  const Shape shape{absl::MakeConstSpan(dims)};
  const bool aligned = reinterpret_cast<uintptr_t>(view->buf) % view->itemsize == 0;
  if (!aligned || view->len == 0) {
    absl::StatusOr<Tensor> copy = CopyOfHostMemory(view->buf, *dtype, shape);
    PyBuffer_Release(view);
    delete view;
    return copy;
  }
  return absl::StatusOr<Tensor>(ExternalTensor(view->buf, *dtype, shape, CPUPlace(), release));
}

absl::Status CheckDtype(const Tensor& t, std::optional<DataType> want, const std::string& what) {
  if (want.has_value() && t.dtype() != *want) {
    return DtypeMismatch(what, std::string(DataTypeName(t.dtype())), *want);
  }
  return absl::OkStatus();
}

absl::Status CheckHost(const Tensor& t, bool allow_device, const std::string& what) {
  if (allow_device || t.place().is_host()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is on ", t.place().ToString(), "; it must be a host tensor"));
}

absl::StatusOr<DataType> DataTypeOfDlpack(DLDataType t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return DataType::kFloat32;
    if (t.code == kDLFloat && t.bits == 64) return DataType::kFloat64;
    if (t.code == kDLInt && t.bits == 32) return DataType::kInt32;
    if (t.code == kDLInt && t.bits == 64) return DataType::kInt64;
    if (t.code == kDLBoolCode && t.bits == 8) return DataType::kBool;
    if (t.code == kDLBfloat && t.bits == 16) return DataType::kBFloat16;
    if (t.code == kDLFloat && t.bits == 16) return DataType::kFloat16;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("DLPack dtype (code ", t.code, ", ", t.bits, " bits, ", t.lanes,
                   " lanes) has no Tandem equivalent (float32, float64, int32, int64, bool, "
                   "bfloat16, float16)"));
}

DLDataType DlpackDataType(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return {kDLFloat, 32, 1};
    case DataType::kFloat64:
      return {kDLFloat, 64, 1};
    case DataType::kInt32:
      return {kDLInt, 32, 1};
    case DataType::kInt64:
      return {kDLInt, 64, 1};
    case DataType::kBool:
      return {kDLBoolCode, 8, 1};
    case DataType::kBFloat16:
      return {kDLBfloat, 16, 1};
    case DataType::kFloat16:
      return {kDLFloat, 16, 1};
  }
  return {kDLFloat, 32, 1};
}

absl::StatusOr<Place> PlaceOfDlpack(DLDevice device) {
  if (device.device_type == kDLCPU || device.device_type == kDLCUDAHost) return CPUPlace();
  if (device.device_type == kDLCUDA) {
    const int count = DeviceRegistry::Global().DeviceCount(DeviceType::GPU());
    if (device.device_id < 0 || device.device_id >= count) {
      return absl::InvalidArgumentError(
          absl::StrCat("DLPack tensor on CUDA device ", device.device_id, " but Tandem has ", count,
                       " gpu device(s)", count == 0 ? " (no CUDA backend or no GPU)" : ""));
    }
    return GPUPlace(device.device_id);
  }
  return absl::InvalidArgumentError(absl::StrCat("DLPack device type ", device.device_type,
                                                 " is neither the CPU nor a CUDA GPU"));
}

// What a "dltensor" capsule made by ToDlpack owns.
struct DlpackExport {
  DLManagedTensor managed;
  Tensor tensor;
  std::vector<int64_t> shape;
};

void DeleteExport(DLManagedTensor* m) { delete static_cast<DlpackExport*>(m->manager_ctx); }

}  // namespace

absl::StatusOr<Tensor> ToHost(const Tensor& t) {
  if (t.place().is_host()) return t;
  ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(t.place()));
  ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(device->host_allocator(), t.dtype(), t.shape()));
  if (t.NumBytes() > 0) {
    RETURN_IF_ERROR(
        device->Copy(CopyKind::kDeviceToHost, host.raw_data(), t.raw_data(), t.NumBytes()));
  }
  return host;
}

absl::StatusOr<Tensor> CopyTo(const Tensor& t, const Place& place) {
  ASSIGN_OR_RETURN(Tensor host, ToHost(t));
  if (place.is_host()) {
    if (host.buffer() != t.buffer()) return host;
    return CopyOfHostMemory(t.raw_data(), t.dtype(), t.shape());
  }
  ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(place));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(device->allocator(), t.dtype(), t.shape()));
  if (t.NumBytes() > 0) {
    RETURN_IF_ERROR(
        device->Copy(CopyKind::kHostToDevice, out.raw_data(), host.raw_data(), t.NumBytes()));
  }
  return out;
}

absl::StatusOr<Tensor> TensorFromPython(py::handle obj, std::optional<DataType> want,
                                        const std::string& what, bool allow_device) {
  if (py::isinstance<PyTensor>(obj)) {
    const Tensor& t = obj.cast<const PyTensor&>().tensor;
    if (!t.initialized()) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is an uninitialized tensor"));
    }
    RETURN_IF_ERROR(CheckDtype(t, want, what));
    RETURN_IF_ERROR(CheckHost(t, allow_device, what));
    return t;
  }
  if (IsBFloat16Array(obj)) {
    if (want.has_value() && *want != DataType::kBFloat16) {
      return DtypeMismatch(what, "bfloat16", *want);
    }
    return TensorOfBFloat16Array(obj);
  }
  if (PyObject_CheckBuffer(obj.ptr())) {
    std::optional<absl::StatusOr<Tensor>> t = TensorFromBuffer(obj, want, what);
    if (t.has_value()) return *std::move(t);
  } else if (py::hasattr(obj, "__dlpack__")) {  // PyTorch, JAX, CuPy
    ASSIGN_OR_RETURN(Tensor t, FromDlpack(obj));
    RETURN_IF_ERROR(CheckDtype(t, want, what));
    RETURN_IF_ERROR(CheckHost(t, allow_device, what));
    return t;
  }
  // Lists, scalars, strided arrays: numpy makes a contiguous array of them.
  py::object array;
  try {
    py::module_ numpy = py::module_::import("numpy");
    const bool is_array = py::isinstance(obj, numpy.attr("ndarray"));
    if (is_array && want.has_value() &&
        DataTypeOfFormat(py::str(obj.attr("dtype").attr("char")).cast<std::string>().c_str(),
                         obj.attr("dtype").attr("itemsize").cast<ssize_t>()) != want) {
      return DtypeMismatch(what, py::str(obj.attr("dtype")).cast<std::string>(), *want);
    }
    if (want == DataType::kBFloat16) {  // lists and scalars: through float32
      array = numpy.attr("ascontiguousarray")(obj, "float32");
      return BFloat16OfFloatArray(array);
    }
    py::object dtype = want.has_value() ? py::object(py::str(std::string(DataTypeName(*want))))
                                        : py::object(py::none());
    array = numpy.attr("ascontiguousarray")(obj, dtype);
  } catch (py::error_already_set& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " cannot be made into an array", want ? " of " : "",
                     want ? DataTypeName(*want) : "", ": ", e.what()));
  }
  std::optional<absl::StatusOr<Tensor>> t = TensorFromBuffer(array, want, what);
  if (!t.has_value()) {
    return absl::InternalError(absl::StrCat(what, ": numpy gave no contiguous buffer"));
  }
  return *std::move(t);
}

py::object TensorToNumpy(const Tensor& t, bool share) {
  if (!t.initialized()) throw StatusError(absl::FailedPreconditionError("uninitialized tensor"));
  Tensor host = ValueOrThrow(ToHost(t));
  if (host.dtype() == DataType::kBFloat16) return BFloat16ArrayOf(host);
  py::module_ numpy = py::module_::import("numpy");
  // Through a memoryview, so numpy takes the buffer (not tandem.Tensor.__array__).
  py::memoryview view(py::cast(PyTensor{host}));
  if (share || host.buffer() != t.buffer()) return numpy.attr("asarray")(view);
  return numpy.attr("array")(view);
}

absl::StatusOr<std::pair<int, int>> DlpackDevice(const Tensor& t) {
  if (t.place().is_host()) return std::make_pair(static_cast<int>(kDLCPU), 0);
  if (t.place().type() == DeviceType::GPU()) {
    return std::make_pair(static_cast<int>(kDLCUDA), t.place().index());
  }
  return absl::InvalidArgumentError(
      absl::StrCat("a tensor on ", t.place().ToString(),
                   " has no DLPack device (only cpu and gpu do); copy it to the host first"));
}

absl::StatusOr<py::capsule> ToDlpack(const Tensor& t) {
  if (!t.initialized()) return absl::FailedPreconditionError("uninitialized tensor");
  ASSIGN_OR_RETURN(auto device, DlpackDevice(t));
  auto* e = new DlpackExport;
  e->tensor = t;
  e->shape.assign(t.shape().dims().begin(), t.shape().dims().end());
  DLTensor& d = e->managed.dl_tensor;
  d.data = t.raw_data();
  d.device = {static_cast<DLDeviceType>(device.first), device.second};
  d.ndim = t.shape().rank();
  d.dtype = DlpackDataType(t.dtype());
  d.shape = e->shape.data();
  d.strides = nullptr;  // row-major, compact
  d.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = DeleteExport;
  // A capsule nobody consumed still owns the tensor; a consumer renames it
  // "used_dltensor" and calls the deleter itself.
  return py::capsule(&e->managed, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      m->deleter(m);
    }
  });
}

absl::StatusOr<Tensor> FromDlpack(py::handle obj) {
  py::object capsule;
  try {
    capsule = PyCapsule_CheckExact(obj.ptr()) ? py::reinterpret_borrow<py::object>(obj)
                                              : obj.attr("__dlpack__")();
  } catch (py::error_already_set& e) {
    return absl::InvalidArgumentError(absl::StrCat("__dlpack__() failed: ", e.what()));
  }
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
    return absl::InvalidArgumentError(
        "from_dlpack needs an object with __dlpack__ or an unused \"dltensor\" capsule");
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const DLTensor& d = m->dl_tensor;
  absl::StatusOr<DataType> dtype = DataTypeOfDlpack(d.dtype);
  absl::StatusOr<Place> place = dtype.ok() ? PlaceOfDlpack(d.device) : dtype.status();
  if (!place.ok()) return place.status();  // the capsule still owns the tensor
  std::vector<int64_t> dims(d.shape, d.shape + d.ndim);
  if (d.strides != nullptr) {
    int64_t expected = 1;
    for (int i = d.ndim - 1; i >= 0; --i) {
      if (dims[i] != 1 && d.strides[i] != expected) {
        return absl::InvalidArgumentError(absl::StrCat(
            "DLPack tensor with strides [", absl::StrJoin(d.strides, d.strides + d.ndim, ", "),
            "] for shape [", absl::StrJoin(dims, ", "),
            "] is not row-major contiguous; make it contiguous first"));
      }
      expected *= dims[i];
    }
  }
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  void* data = static_cast<char*>(d.data) + d.byte_offset;
  auto release = [m] {
    if (m->deleter == nullptr) return;
    WithGil([m] { m->deleter(m); });  // numpy's and PyTorch's deleters touch Python objects
  };
  return ExternalTensor(data, *dtype, Shape(absl::MakeConstSpan(dims)), *place, release);
}

}  // namespace python
}  // namespace tandem
