// The update kernels' dense gradient as Param's dtype: scaled by GradScale
// (gradient clipping's factor, host memory) or widened from 16 bits (a
// mixed-precision gradient) into scratch before the update reads it.
//
//   Tensor scaled;
//   ASSIGN_OR_RETURN(const T* g, ScaledDenseGrad<T>(ctx, a, &scaled));
//   CUDA_RETURN_IF_ERROR(LaunchAdamDense<T>(param, m1, m2, g, n, step, stream));
//
// Enqueued on the context's stream (async). Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_
#define TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_

#include <cstdint>
#include <type_traits>

#include "absl/status/statusor.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/types/float16.h"
#include "ops/optimizer/prologues.h"

namespace tandem {
namespace cuda {

// The dense Grad of `a` as T, in `*scratch` when it must be made: a
// 16-bit Grad (a float32 Param's mixed-precision gradient) widened to T,
// exactly; with GradScale bound and not 1, the values times GradScale in T
// (rounded once, as the host kernels' block does).
template <typename T>
absl::StatusOr<const T*> ScaledDenseGrad(KernelContext* ctx, const prologue::UpdateArgs& a,
                                         Tensor* scratch) {
  const Tensor& grad = a.grad->tensor();
  const bool widened = grad.dtype() != a.param->dtype();
  if (a.grad_scale == 1 && !widened) return grad.data<T>();
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  ASSIGN_OR_RETURN(*scratch,
                   AllocateScratch(ctx, a.param->dtype(), grad.shape(), "scaled gradient"));
  const T* g = widened ? nullptr : grad.data<T>();
  if (widened) {
    if constexpr (std::is_same_v<T, float>) {
      CUDA_RETURN_IF_ERROR(
          grad.dtype() == DataType::kBFloat16
              ? LaunchCast<bfloat16, float>(grad.data<bfloat16>(), scratch->data<float>(),
                                            grad.NumElements(), stream)
              : LaunchCast<float16, float>(grad.data<float16>(), scratch->data<float>(),
                                           grad.NumElements(), stream));
      g = scratch->data<T>();
    } else {
      return absl::InternalError("a 16-bit Grad of a Param that is not float32");
    }
  }
  if (a.grad_scale != 1) {
    CUDA_RETURN_IF_ERROR(
        LaunchScale<T>(g, scratch->data<T>(), grad.NumElements(), a.grad_scale, 0, true, stream));
  }
  return scratch->data<T>();
}

// The scratch ScaledDenseGrad may take: Param's dtype times Grad's elements
// when GradScale is bound or Grad is 16-bit.
inline int64_t GradScaleScratch(const ArgMetas& in) {
  const TensorMeta* grad = FirstMeta(in, "Grad");
  const TensorMeta* param = FirstMeta(in, "Param");
  if (grad == nullptr || param == nullptr ||
      (FirstMeta(in, "GradScale") == nullptr && grad->dtype == param->dtype)) {
    return 0;
  }
  absl::StatusOr<int64_t> n = grad->shape.NumElements();
  return n.ok() ? *n * static_cast<int64_t>(SizeOf(param->dtype)) : 0;
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
