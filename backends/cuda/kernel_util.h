// Helpers shared by the CUDA backend's OpKernels.
//
//   absl::Status Compute(KernelContext* ctx) override {
//     const cudaStream_t stream = CudaStreamOf(ctx->stream());
//     RETURN_IF_ERROR(prologue::CheckSameDtype(*ctx, *x, *y));  // backends/common
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

#include <utility>

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
    case DataType::kBFloat16:
    case DataType::kFloat16:
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

// Calls fn(TypeTag<T>{}) for bfloat16 or float16; Internal otherwise.
template <typename Fn>
absl::Status Dispatch16BitFloat(DataType t, Fn&& fn) {
  if (t == DataType::kBFloat16) return fn(TypeTag<bfloat16>{});
  if (t == DataType::kFloat16) return fn(TypeTag<float16>{});
  return absl::InternalError(absl::StrCat("16-bit kernel called for ", DataTypeName(t)));
}

// Calls fn(TypeTag<T>{}) for float, double, bfloat16 or float16; Internal
// otherwise.
template <typename Fn>
absl::Status DispatchFloatWith16Bit(DataType t, Fn&& fn) {
  if (IsLowPrecisionFloat(t)) return Dispatch16BitFloat(t, std::forward<Fn>(fn));
  return DispatchFloat(t, std::forward<Fn>(fn));
}

// Calls fn(TypeTag<T>{}) for the numeric types, bfloat16 or float16.
template <typename Fn>
absl::Status DispatchNumericWith16Bit(DataType t, Fn&& fn) {
  if (IsLowPrecisionFloat(t)) return Dispatch16BitFloat(t, std::forward<Fn>(fn));
  return DispatchNumeric(t, std::forward<Fn>(fn));
}

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_KERNEL_UTIL_H_
