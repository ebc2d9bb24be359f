#include "backends/cuda/scratch.h"

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/kernel_util.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace cuda {

absl::StatusOr<Tensor> AllocateScratch(const KernelContext* ctx, DataType dtype, const Shape& shape,
                                       absl::string_view purpose) {
  absl::StatusOr<Tensor> t =
      Tensor::Allocate(CudaDeviceOf(ctx->device())->allocator(), dtype, shape);
  if (t.ok()) return t;
  return absl::Status(t.status().code(),
                      absl::StrCat("op '", ctx->op().type, "': temporary ", DataTypeName(dtype),
                                   shape.ToString(), " for ", purpose, ": ", t.status().message()));
}

absl::StatusOr<Tensor> WidenedCopy(const KernelContext* ctx, const Tensor& t) {
  ASSIGN_OR_RETURN(Tensor wide, AllocateScratch(ctx, DataType::kFloat32, t.shape(),
                                                "a float32 copy of a 16-bit tensor"));
  RETURN_IF_ERROR(Dispatch16BitFloat(t.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    CUDA_RETURN_IF_ERROR(LaunchCast<T, float>(t.data<T>(), wide.data<float>(), t.NumElements(),
                                              CudaStreamOf(ctx->stream())));
    return absl::OkStatus();
  }));
  return wide;
}

absl::Status NarrowInto(const KernelContext* ctx, const Tensor& wide, Tensor* out) {
  if (wide.dtype() != DataType::kFloat32 || wide.NumElements() != out->NumElements()) {
    return absl::InternalError(absl::StrCat("NarrowInto: ", DataTypeName(wide.dtype()),
                                            wide.shape().ToString(), " into ",
                                            DataTypeName(out->dtype()), out->shape().ToString()));
  }
  return Dispatch16BitFloat(out->dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    CUDA_RETURN_IF_ERROR(LaunchCast<float, T>(wide.data<float>(), out->data<T>(),
                                              out->NumElements(), CudaStreamOf(ctx->stream())));
    return absl::OkStatus();
  });
}

}  // namespace cuda
}  // namespace tandem
