// The update kernels' GradScale (gradient clipping's factor, host memory):
// a dense gradient scaled into scratch before the update reads it.
//
//   Tensor scaled;
//   ASSIGN_OR_RETURN(const T* g, ScaledDenseGrad<T>(ctx, a, &scaled));
//   CUDA_RETURN_IF_ERROR(LaunchAdamDense<T>(param, m1, m2, g, n, step, stream));
//
// Enqueued on the context's stream (async). Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_
#define TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "backends/common/optimizer_prologues.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_registry.h"

namespace tandem {
namespace cuda {

// The dense Grad of `a`, or (GradScale bound and not 1) Grad * GradScale in
// T (rounded once, as the host kernels' block does) in `*scratch`.
template <typename T>
absl::StatusOr<const T*> ScaledDenseGrad(KernelContext* ctx, const prologue::UpdateArgs& a,
                                         Tensor* scratch) {
  const Tensor& grad = a.grad->tensor();
  if (a.grad_scale == 1) return grad.data<T>();
  ASSIGN_OR_RETURN(*scratch, AllocateScratch(ctx, grad.dtype(), grad.shape(), "scaled gradient"));
  CUDA_RETURN_IF_ERROR(LaunchScale<T>(grad.data<T>(), scratch->data<T>(), grad.NumElements(),
                                      a.grad_scale, 0, true, CudaStreamOf(ctx->stream())));
  return scratch->data<T>();
}

// The scratch ScaledDenseGrad may take: Grad's bytes when GradScale is
// bound.
inline int64_t GradScaleScratch(const ArgMetas& in) {
  const TensorMeta* grad = FirstMeta(in, "Grad");
  if (FirstMeta(in, "GradScale") == nullptr || grad == nullptr) return 0;
  absl::StatusOr<int64_t> n = grad->shape.NumElements();
  return n.ok() ? *n * static_cast<int64_t>(SizeOf(grad->dtype)) : 0;
}

// An update kernel's KernelDef::Scratch: `sparse` (its sparse path's) plus
// GradScaleScratch (a scaled gradient is dense: at most one is taken).
inline ScratchFn WithGradScaleScratch(ScratchFn sparse) {
  return [sparse](const OpDesc& op, const ArgMetas& in, const ArgMetas& out) {
    return sparse(op, in, out) + GradScaleScratch(in);
  };
}

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_
