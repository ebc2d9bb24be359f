// The update kernels' dense gradient as their launchers read it: Param's
// dtype, or the 16-bit gradient of a float32 Param (a mixed-precision
// step), which the update kernel widens as it reads it. GradScale
// (gradient clipping's factor, host memory) goes to the launch as an
// argument and is applied there (sgd_launchers.h, optimizer_launchers.h):
// no scratch copy of the gradient is made.
//
//   RETURN_IF_ERROR(WithDenseGrad<T>(a, [&](const auto* g) -> absl::Status {
//     CUDA_RETURN_IF_ERROR(LaunchAdamDense<T>(param, m1, m2, g, n, GradScaleOf<T>(a), step,
//                                             stream));
//     return absl::OkStatus();
//   }));
//
// Thread-safe; nothing is enqueued here.
#ifndef TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_
#define TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_

#include <type_traits>

#include "absl/status/status.h"
#include "framework/types/float16.h"
#include "ops/optimizer/prologues.h"

namespace tandem {
namespace cuda {

// Calls f with a's dense Grad as a device pointer of its own type: T (the
// Param's) or, for a float32 Param, bfloat16 or float16. Internal for any
// other pair (the kernels' registrations and the prologue exclude them).
template <typename T, typename F>
absl::Status WithDenseGrad(const prologue::UpdateArgs& a, F&& f) {
  const Tensor& grad = a.grad->tensor();
  if (grad.dtype() == a.param->dtype()) return f(grad.data<T>());
  if constexpr (std::is_same_v<T, float>) {
    if (grad.dtype() == DataType::kBFloat16) return f(grad.data<bfloat16>());
    if (grad.dtype() == DataType::kFloat16) return f(grad.data<float16>());
  }
  return absl::InternalError("a 16-bit Grad of a Param that is not float32");
}

// GradScale's value in T (1 when not bound), as the host kernels convert it.
template <typename T>
T GradScaleOf(const prologue::UpdateArgs& a) {
  return static_cast<T>(a.grad_scale);
}

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_GRAD_SCALE_H_
