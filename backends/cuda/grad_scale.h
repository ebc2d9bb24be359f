// The update kernels' dense gradient as their launchers read it: Param's
// dtype, or the 16-bit gradient of a float32 Param (a mixed-precision
// step), which the update kernel widens as it reads it. GradScale
// (gradient clipping's factor, host memory) goes to the launch as an
// argument and is applied there (sgd_launchers.h, optimizer_launchers.h):
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

// GradScale's value in T (1 when not bound), as the host kernels convert it.
template <typename T>
T GradScaleOf(const prologue::UpdateArgs& a) {
  return static_cast<T>(a.grad_scale);
}

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_
