// Tensors between Tandem and Python: the buffer protocol (numpy) and DLPack
// (numpy, PyTorch, JAX), sharing memory wherever lifetimes allow.
//
//   Tensor t = ValueOrThrow(TensorFromPython(ndarray, DataType::kFloat32, "feed 'x'"));
//   py::object a = TensorToNumpy(fetched, /*share=*/true);   // a view when possible
//   py::capsule c = ToDlpack(t);                              // "dltensor" capsule
//   Tensor u = ValueOrThrow(FromDlpack(torch_tensor));        // shares its memory
//
// Sharing rules. From Python: a C-contiguous buffer whose format is one of
// Tandem's five dtypes (float32 'f', float64 'd', int32, int64, bool '?')
// and whose data is aligned to its element size is wrapped, not copied: the
// tensor holds the buffer (and so the array) until its last user drops it.
// Anything else (strided, misaligned, other dtypes, Python lists and
// scalars) is converted through numpy.asarray with the wanted dtype, or
// refused with InvalidArgument naming `what`, the dtype found and the one
// wanted. To Python: numpy views of host tensors (tandem.Tensor exports the
// buffer protocol), copies of device tensors. No function here needs numpy's
// C API, so the extension works with numpy 1.x and 2.x alike.
//
// Every function needs the GIL. The release of a wrapped buffer takes the
// GIL itself, from whichever thread drops the tensor.
#ifndef TANDEM_PYTHON_TENSOR_BRIDGE_H_
#define TANDEM_PYTHON_TENSOR_BRIDGE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "framework/tensor/tensor.h"
#include "framework/tensor/variable.h"
#include "pybind11/pybind11.h"

namespace tandem {
namespace python {

// What tandem.Tensor holds: a tensor, and optionally the scope variable it
// came from (so Tensor.set can replace that variable's value).
struct PyTensor {
  Tensor tensor;
  Variable* owner = nullptr;     // a scope's variable, or null
  pybind11::object owner_scope;  // keeps the owner's scope alive
};

// A host tensor from `obj` (see the sharing rules). `want`: the dtype the
// caller needs (nullopt: whatever the buffer holds). tandem.Tensor objects
// are shared as they are (device tensors too when `allow_device`).
// bfloat16: numpy arrays of ml_dtypes.bfloat16 are copied; lists and
// scalars are rounded from float32 (no ml_dtypes needed).
absl::StatusOr<Tensor> TensorFromPython(pybind11::handle obj, std::optional<DataType> want,
                                        const std::string& what, bool allow_device = false);

// A numpy array of `t`: a view when `share` and `t` is on the host, else a
// copy (device tensors are copied to the host first). bfloat16 tensors are
// always copied, into an ml_dtypes.bfloat16 array (FailedPrecondition
// naming the package when it is not installed).
pybind11::object TensorToNumpy(const Tensor& t, bool share);

// `t` on the host: itself when it is there, else a synchronous copy.
absl::StatusOr<Tensor> ToHost(const Tensor& t);
// `t` copied to `place` (a new buffer; a synchronous copy).
absl::StatusOr<Tensor> CopyTo(const Tensor& t, const Place& place);

// A DLPack capsule ("dltensor") sharing `t`'s memory. cpu and pinned host
// memory are kDLCPU, gpu:N is kDLCUDA N; other places (sim) have no DLPack
// device and are InvalidArgument.
absl::StatusOr<pybind11::capsule> ToDlpack(const Tensor& t);
// (device type, device id) of `t` for __dlpack_device__.
absl::StatusOr<std::pair<int, int>> DlpackDevice(const Tensor& t);
// A tensor sharing the memory of `obj` (an object with __dlpack__, or a
// "dltensor" capsule). InvalidArgument for a dtype, device or layout
// (non-contiguous strides) Tandem has no equivalent of.
absl::StatusOr<Tensor> FromDlpack(pybind11::handle obj);

// Registers tandem.Tensor (class _C.Tensor), from_dlpack and to_tensor.
void RegisterTensor(pybind11::module_& m);

}  // namespace python
}  // namespace tandem

#endif  // TANDEM_PYTHON_TENSOR_BRIDGE_H_
