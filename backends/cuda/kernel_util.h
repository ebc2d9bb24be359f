// Helpers shared by the CUDA backend's OpKernels.
//
//   absl::Status Compute(KernelContext* ctx) override {
//     const cudaStream_t stream = CudaStreamOf(ctx->stream());
//     RETURN_IF_ERROR(CheckSameDtype(ctx, *x, *y));
//     return DispatchNumeric(x->dtype(), [&](auto tag) -> absl::Status {
//       using T = typename decltype(tag)::type;
//       ...
//     });
//   }
//
// Compute runs with ctx->place() already the thread's current CUDA device
// (the executor and RunOpEager switch it with DeviceGuard), so kernels never
// switch devices themselves. Header-only, stateless, thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_KERNEL_UTIL_H_
#define TANDEM_BACKENDS_CUDA_KERNEL_UTIL_H_

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "framework/kernel/kernel_context.h"
#include "framework/types/data_type.h"

namespace tandem {
namespace cuda {

// Calls fn(TypeTag<T>{}) for float, double, int32_t or int64_t. Bool is an
// Internal error: registrations keep it away from numeric kernels.
template <typename Fn>
absl::Status DispatchNumeric(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::kFloat32:
      return fn(TypeTag<float>{});
    case DataType::kFloat64:
      return fn(TypeTag<double>{});
    case DataType::kInt32:
      return fn(TypeTag<int32_t>{});
    case DataType::kInt64:
      return fn(TypeTag<int64_t>{});
    case DataType::kBool:
      break;
  }
  return absl::InternalError(absl::StrCat("numeric kernel called for ", DataTypeName(t)));
}

// Calls fn(TypeTag<T>{}) for float or double; Internal otherwise.
template <typename Fn>
absl::Status DispatchFloat(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::kFloat32:
      return fn(TypeTag<float>{});
    case DataType::kFloat64:
      return fn(TypeTag<double>{});
    default:
      break;
  }
  return absl::InternalError(absl::StrCat("floating kernel called for ", DataTypeName(t)));
}

// InvalidArgument unless X and Y have one dtype (kernel lookup only checks
// X): "op 'matmul': X is float32[2, 3] but Y is float64[3, 2]; cast one of them".
inline absl::Status CheckSameDtype(const KernelContext* ctx, const Tensor& x, const Tensor& y) {
  if (x.dtype() == y.dtype()) return absl::OkStatus();
  return ctx->InvalidArgument(absl::StrCat("X is ", DataTypeName(x.dtype()), x.shape().ToString(),
                                           " but Y is ", DataTypeName(y.dtype()),
                                           y.shape().ToString(), "; cast one of them"));
}

// InvalidArgument unless Out@GRAD is `dtype` with shape `expected`:
// "op 'matmul_grad': Out@GRAD is float32[2, 3], expected float32[2, 2]".
inline absl::Status CheckOutGrad(const KernelContext* ctx, const Tensor& dout, DataType dtype,
                                 const Shape& expected) {
  if (dout.dtype() == dtype && dout.shape() == expected) return absl::OkStatus();
  return ctx->InvalidArgument(absl::StrCat("Out@GRAD is ", DataTypeName(dout.dtype()),
                                           dout.shape().ToString(), ", expected ",
                                           DataTypeName(dtype), expected.ToString()));
}

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_KERNEL_UTIL_H_
