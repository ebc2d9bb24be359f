#include "backends/cuda/scratch.h"

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"

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

}  // namespace cuda
}  // namespace tandem
