// The kernels of the optimizer ops (ops/optimizer) for every backend whose
// memory the host can address: sgd. Written once, templated on an
// execution policy (serial_policy.h). A backend registers them under its
// device type with one line:
//
//   // in an anonymous namespace of the backend's kernel .cc file
//   const OptimizerKernelsRegistrar<SerialPolicy> optimizer_kernels("sim");
//
// RegisterOptimizerKernels holds the registration lines:
//   sgd    Param: float32, float64; HostMemory(LearningRate)
// so the learning rate is read on the host and never copied. Kernels
// validate their inputs with ops/optimizer/shape_fns.h, update Param in
// place synchronously through the policy and never copy between places.
// Compute is thread-safe across kernel instances (not for one Param).
#ifndef TANDEM_BACKENDS_COMMON_OPTIMIZER_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_OPTIMIZER_KERNELS_H_

#include <string>

#include "absl/status/status.h"
#include "backends/common/elementwise.h"
#include "backends/common/rows.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/tensor/selected_rows.h"
#include "framework/tensor/tensor.h"
#include "framework/tensor/variable.h"

namespace tandem {
namespace optimizer_kernels_internal {

// The inputs of sgd, validated (CheckSgdArgs; a sparse Grad's value must
// have one row per index and every index must be in [0, Param.dim(0)),
// else InvalidArgument naming the position, the index and both variables).
struct SgdArgs {
  const Tensor* param = nullptr;
  const Variable* grad = nullptr;  // a dense tensor or SelectedRows
  float learning_rate = 0;         // read on the host
};
absl::StatusOr<SgdArgs> GetSgdArgs(const KernelContext& ctx);

}  // namespace optimizer_kernels_internal

// ParamOut = Param - LearningRate * Grad, updating Param's buffer in place
// (ParamOut is bound to Param's tensor). Dense Grad: Param's shape. Sparse
// Grad (SelectedRows of height Param.dim(0)): Param[rows[i]] -= lr *
// value[i] for each i, duplicate rows accumulating in order; threads own
// disjoint row ranges of Param, so the update is race-free. LearningRate is
// float32 with one element, in host memory.
template <typename Policy>
class SgdKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const optimizer_kernels_internal::SgdArgs a,
                     optimizer_kernels_internal::GetSgdArgs(*ctx));
    const Tensor& param = *a.param;
    RETURN_IF_ERROR(DispatchType(Types(), param.dtype(), *ctx, "Param", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = param.data<T>();
      const T lr = static_cast<T>(a.learning_rate);
      if (a.grad->is_selected_rows()) {
        const SelectedRows& g = a.grad->selected_rows();
        const int64_t height = param.shape().dim(0);
        ScatterAddRows<T, Policy>(g.rows().data(), static_cast<int64_t>(g.rows().size()),
                                  g.value().data<T>(),
                                  height == 0 ? 0 : param.NumElements() / height, -lr, p, height);
      } else {
        const T* g = a.grad->tensor().data<T>();
        Policy::ParallelFor(param.NumElements(), kMinElementsPerTask,
                            [&](int64_t begin, int64_t end) {
                              for (int64_t i = begin; i < end; ++i) p[i] -= lr * g[i];
                            });
      }
      return absl::OkStatus();
    }));
    return ctx->SetOutput("ParamOut", param);
  }
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterOptimizerKernels(const std::string& device_type) {
  KernelRegistry::Global().Register(
      KernelDef("sgd", device_type)
          .TypeConstraint("Param", SgdKernel<Policy>::Types::DataTypes())
          .HostMemory("LearningRate"),
      MakeKernelFactory<SgdKernel<Policy>>());
}

// Calls RegisterOptimizerKernels<Policy>(device_type) during static
// initialisation; define one in the backend's kernel .cc file, whose
// cc_library must have alwayslink = True.
template <typename Policy>
struct OptimizerKernelsRegistrar {
  explicit OptimizerKernelsRegistrar(const std::string& device_type) {
    RegisterOptimizerKernels<Policy>(device_type);
  }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_OPTIMIZER_KERNELS_H_
