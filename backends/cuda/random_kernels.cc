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
    ASSIGN_OR_RETURN(out_, UniformRandomMeta(op));
    ASSIGN_OR_RETURN(min_, GetAttr<double>(op.attrs, "min", op.type));
    ASSIGN_OR_RETURN(max_, GetAttr<double>(op.attrs, "max", op.type));
    ASSIGN_OR_RETURN(seed_, GetAttr<int64_t>(op.attrs, "seed", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", out_.dtype, out_.shape));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(out_.dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(
          LaunchUniformRandom<T>(out->data<T>(), out->NumElements(), min_, max_, seed_, stream));
      return absl::OkStatus();
    });
  }

 private:
  TensorMeta out_;
  double min_ = -1, max_ = 1;
  int64_t seed_ = 0;
};

REGISTER_KERNEL(KernelDef("uniform_random", "gpu").TypeConstraint("dtype", kFloatTypes),
                UniformRandomKernel);

class GaussianRandomKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(out_, GaussianRandomMeta(op));
    ASSIGN_OR_RETURN(mean_, GetAttr<double>(op.attrs, "mean", op.type));
    ASSIGN_OR_RETURN(std_, GetAttr<double>(op.attrs, "std", op.type));
    ASSIGN_OR_RETURN(seed_, GetAttr<int64_t>(op.attrs, "seed", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", out_.dtype, out_.shape));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(out_.dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(
          LaunchGaussianRandom<T>(out->data<T>(), out->NumElements(), mean_, std_, seed_, stream));
      return absl::OkStatus();
    });
  }

 private:
  TensorMeta out_;
  double mean_ = 0, std_ = 1;
  int64_t seed_ = 0;
};

REGISTER_KERNEL(KernelDef("gaussian_random", "gpu").TypeConstraint("dtype", kFloatTypes),
                GaussianRandomKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
