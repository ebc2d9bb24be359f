// gpu kernels of square_error_cost(_grad) and mean(_grad).
#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/loss_launchers.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/loss/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

TensorMeta MetaOf(const Tensor& t) { return TensorMeta{t.dtype(), t.shape()}; }

class SquareErrorCostKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(TensorMeta out_meta,
                     SquareErrorCostMeta(ctx->op().type, MetaOf(*x), MetaOf(*y)));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", out_meta.dtype, out_meta.shape));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchSquareErrorCost<T>(x->data<T>(), y->data<T>(), out->data<T>(),
                                                    x->NumElements(), stream));
      return absl::OkStatus();
    });
  }
};

REGISTER_KERNEL(KernelDef("square_error_cost", "gpu").TypeConstraint("X", kFloatTypes),
                SquareErrorCostKernel);

// Computes only the gradients the op binds.
class SquareErrorCostGradKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    const std::string& op = ctx->op().type;
    ASSIGN_OR_RETURN(TensorMeta out_meta, SquareErrorCostMeta(op, MetaOf(*x), MetaOf(*y)));
    RETURN_IF_ERROR(
        CheckArgMeta(op, "Out@GRAD", dout->dtype(), dout->shape(), out_meta.dtype, out_meta.shape));
    Tensor* dx = nullptr;
    Tensor* dy = nullptr;
    if (ctx->OutputVar("X@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    }
    if (ctx->OutputVar("Y@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dy, ctx->AllocateOutput("Y@GRAD", y->dtype(), y->shape()));
    }
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchSquareErrorCostGrad<T>(
          x->data<T>(), y->data<T>(), dout->data<T>(), dx == nullptr ? nullptr : dx->data<T>(),
          dy == nullptr ? nullptr : dy->data<T>(), x->NumElements(), stream));
      return absl::OkStatus();
    });
  }
};

REGISTER_KERNEL(KernelDef("square_error_cost_grad", "gpu").TypeConstraint("X", kFloatTypes),
                SquareErrorCostGradKernel);

// A one-launch reduction (loss_launchers.h) through a temporary of partial
// sums, released when Compute returns (later users of that memory are
// ordered after this stream, caching_allocator.h), and a block counter that
// the kernel object keeps: zeroed once, left zeroed by every launch.
class MeanKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(TensorMeta out_meta, MeanMeta(ctx->op().type, MetaOf(*x)));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", out_meta.dtype, out_meta.shape));
    const int64_t n = x->NumElements();
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    if (!blocks_done_.initialized() || blocks_done_.place() != ctx->place()) {
      ASSIGN_OR_RETURN(blocks_done_,
                       AllocateScratch(ctx, DataType::kInt32, Shape({1}), "a block counter"));
      CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(blocks_done_.raw_data(), 0, blocks_done_.NumBytes(), stream));
    }
    const int parts = MeanPartCount(n);
    ASSIGN_OR_RETURN(const Tensor partials,
                     AllocateScratch(ctx, DataType::kFloat64, Shape({parts}), "partial sums"));
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchMean<T>(x->data<T>(), n, partials.data<double>(), parts,
                                         static_cast<unsigned int*>(blocks_done_.raw_data()),
                                         out->data<T>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  Tensor blocks_done_;  // device memory of the last place used
};

REGISTER_KERNEL(KernelDef("mean", "gpu").TypeConstraint("X", kFloatTypes), MeanKernel);

class MeanGradKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    const std::string& op = ctx->op().type;
    ASSIGN_OR_RETURN(TensorMeta out_meta, MeanMeta(op, MetaOf(*x)));
    RETURN_IF_ERROR(
        CheckArgMeta(op, "Out@GRAD", dout->dtype(), dout->shape(), out_meta.dtype, out_meta.shape));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(
          LaunchMeanGrad<T>(dout->data<T>(), dx->data<T>(), x->NumElements(), stream));
      return absl::OkStatus();
    });
  }
};

REGISTER_KERNEL(KernelDef("mean_grad", "gpu").TypeConstraint("X", kFloatTypes), MeanGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
