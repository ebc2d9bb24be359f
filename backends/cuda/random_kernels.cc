// gpu kernels of uniform_random and gaussian_random: the counter-based
// generators of every backend (random_launchers.h); uniform_random is
// bit-identical to the host kernels, gaussian_random up to CUDA's log and cos.
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/random_launchers.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/random/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

class UniformRandomKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(a_, UniformRandomAttrs::Read(op));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", a_.out.dtype, a_.out.shape));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(a_.out.dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchUniformRandom<T>(out->data<T>(), out->NumElements(), a_.min,
                                                  a_.max, a_.seed, stream));
      return absl::OkStatus();
    });
  }

 private:
  UniformRandomAttrs a_;
};

REGISTER_KERNEL(KernelDef("uniform_random", "gpu").TypeConstraint("dtype", kFloatTypes),
                UniformRandomKernel);

class GaussianRandomKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(a_, GaussianRandomAttrs::Read(op));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", a_.out.dtype, a_.out.shape));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(a_.out.dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchGaussianRandom<T>(out->data<T>(), out->NumElements(), a_.mean,
                                                   a_.std, a_.seed, stream));
      return absl::OkStatus();
    });
  }

 private:
  GaussianRandomAttrs a_;
};

REGISTER_KERNEL(KernelDef("gaussian_random", "gpu").TypeConstraint("dtype", kFloatTypes),
                GaussianRandomKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
