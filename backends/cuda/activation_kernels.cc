// gpu kernels of relu, sigmoid, tanh, gelu and their gradients (which read
// the forward Out; gelu's the forward X), with the host kernels' registration lines and, through
// the shared prologues (ops/math/prologues.h), their messages.
#include <cuda_runtime_api.h>

#include "backends/common/activation_of.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/math_launchers.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/prologues.h"

namespace tandem {
namespace cuda {
namespace {

template <Activation kAct>
class ActivationKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(act_, ActivationOf(op, kAct));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloatWith16Bit(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(
          LaunchActivation<T>(act_, x->data<T>(), out->data<T>(), x->NumElements(), stream));
      return absl::OkStatus();
    });
  }

 private:
  Activation act_ = kAct;
};

template <Activation kAct>
class ActivationGradKernel : public OpKernel {
 public:
  static constexpr const char* kFwd = GradForwardArg(kAct);

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(act_, ActivationOf(op, kAct));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ActivationGradArgs a,
                     prologue::GetActivationGradArgs(ctx, kFwd));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloatWith16Bit(a.fwd->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchActivationGrad<T>(act_, a.fwd->data<T>(), a.dout->data<T>(),
                                                   a.dx->data<T>(), a.fwd->NumElements(), stream));
      return absl::OkStatus();
    });
  }

 private:
  Activation act_ = kAct;
};

#define TANDEM_ACTIVATION(name, act)                                                          \
  REGISTER_KERNEL(KernelDef(name, "gpu").TypeConstraint("X", kFloatTypesWith16Bit),           \
                  ActivationKernel<act>);                                                     \
  REGISTER_KERNEL(KernelDef(name "_grad", "gpu")                                              \
                      .TypeConstraint(ActivationGradKernel<act>::kFwd, kFloatTypesWith16Bit), \
                  ActivationGradKernel<act>)
TANDEM_ACTIVATION("relu", Activation::kRelu);
TANDEM_ACTIVATION("sigmoid", Activation::kSigmoid);
TANDEM_ACTIVATION("tanh", Activation::kTanh);
TANDEM_ACTIVATION("gelu", Activation::kGelu);
#undef TANDEM_ACTIVATION

}  // namespace
}  // namespace cuda
}  // namespace tandem
