// The update kernels' dense gradient as their launchers read it: Param's
// dtype, or the 16-bit gradient of a float32 Param (a mixed-precision
// step), which the update kernel widens as it reads it. GradScale
// (gradient clipping's factor, device memory written by global_norm_clip's
// kernel) goes to the launch as a pointer the kernel reads and applies
// (sgd_launchers.h, optimizer_launchers.h): the host never waits for it and
// no scratch copy of the gradient is made.
//
//   RETURN_IF_ERROR(WithDenseGrad<T>(a.grad->tensor(), [&](const auto* g) -> absl::Status {
//     CUDA_RETURN_IF_ERROR(LaunchAdamDense<T>(param, m1, m2, g, n, GradScaleOf<T>(a), step,
//                                             WorkingCopy(), stream));
//     return absl::OkStatus();
//   }));
//
// Thread-safe; nothing is enqueued here.
#ifndef TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_
#define TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_

#include "backends/common/optimizer_kernels.h"  // WithDenseGrad
#include "ops/optimizer/prologues.h"

namespace tandem {
namespace cuda {

// GradScale's device address (Param's dtype T, checked by the prologue), or
// null when not bound.
template <typename T>
const T* GradScaleOf(const prologue::UpdateArgs& a) {
  return a.grad_scale == nullptr ? nullptr : a.grad_scale->data<T>();
}

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_
