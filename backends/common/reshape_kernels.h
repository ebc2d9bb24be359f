// The kernels of reshape and reshape_grad, for every place: they move no
// data (the output shares the input's buffer with new dims), so one pair
// serves the host backends (registered by layout_kernels.h) and the gpu
// (backends/cuda):
//
//   REGISTER_KERNEL(KernelDef("reshape", "gpu").TypeConstraint("X", kNumericTypes), ReshapeKernel);
//
// Errors are InvalidArgument naming the op and the shapes. Compute is
// synchronous (no device work) and thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_RESHAPE_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_RESHAPE_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"

namespace tandem {

// Out = X with dims attr shape (0 copies X's dim, one -1 is inferred;
// ReshapeShape), sharing X's buffer: no element moves.
class ReshapeKernel final : public OpKernel {
 public:
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("reshape", device_type).TypeConstraint("X", kNumericTypes);
  }
  absl::Status Init(const OpDesc& op) override;
  absl::Status Compute(KernelContext* ctx) override;

 private:
  std::vector<int64_t> shape_;
};

// X@GRAD = Out@GRAD with X's dims, sharing Out@GRAD's buffer. Out@GRAD must
// have X's dtype and element count.
class ReshapeGradKernel final : public OpKernel {
 public:
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("reshape_grad", device_type).TypeConstraint("X", kNumericTypes);
  }
  absl::Status Compute(KernelContext* ctx) override;
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_RESHAPE_KERNELS_H_
