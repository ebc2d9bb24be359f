// gpu kernels of fc and fc_grad: the products on cuBLAS (gemm.h), the bias
// added to every row and its gradient summed over the rows by the
// broadcasting kernels. Registration lines, validation and messages are the
// host kernels' (backends/common/nn_kernels.h, whose GetFcDims they call).
#include <cuda_runtime_api.h>

#include "backends/common/nn_kernels.h"
#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/broadcast_plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/kernel_util.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"

namespace tandem {
namespace cuda {
namespace {

// Out = Input * W, then Bias added to every row (K == 0: Bias or zeros).
class FcKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(in_num_col_dims_, GetAttr<int64_t>(op.attrs, "in_num_col_dims", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* input, ctx->InputTensor("Input"));
    ASSIGN_OR_RETURN(const Tensor* w, ctx->InputTensor("W"));
    const Tensor* bias = nullptr;
    if (ctx->HasInput("Bias")) {
      ASSIGN_OR_RETURN(bias, ctx->InputTensor("Bias"));
    }
    ASSIGN_OR_RETURN(const FlatMatmulDims d,
                     nn_kernels_internal::GetFcDims(*ctx, *input, *w, bias, in_num_col_dims_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", input->dtype(), d.out));
    RETURN_IF_ERROR(RunFlatMatmul(ctx, *input, *w, d.m, d.k, d.n, out));
    if (bias == nullptr) return absl::OkStatus();
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(input->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchBinaryRow<T>(ElementwiseOp::kAdd, out->data<T>(), bias->data<T>(),
                                              /*row_is_x=*/false, out->data<T>(), d.m * d.n, d.n,
                                              stream));
      return absl::OkStatus();
    });
  }

 private:
  int64_t in_num_col_dims_ = 1;
};

REGISTER_KERNEL(KernelDef("fc", "gpu").TypeConstraint("Input", kFloatTypes), FcKernel);

// Input@GRAD = Out@GRAD * W^T, W@GRAD = Input^T * Out@GRAD, Bias@GRAD = the
// column sums of Out@GRAD (float32 in double), each only when bound.
class FcGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(in_num_col_dims_, GetAttr<int64_t>(op.attrs, "in_num_col_dims", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* input, ctx->InputTensor("Input"));
    ASSIGN_OR_RETURN(const Tensor* w, ctx->InputTensor("W"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    ASSIGN_OR_RETURN(const FlatMatmulDims d,
                     nn_kernels_internal::GetFcDims(*ctx, *input, *w, nullptr, in_num_col_dims_));
    const DataType dtype = input->dtype();
    RETURN_IF_ERROR(
        CheckArgMeta(ctx->op().type, "Out@GRAD", dout->dtype(), dout->shape(), dtype, d.out));
    Tensor* dinput = nullptr;
    Tensor* dw = nullptr;
    if (ctx->OutputVar("Input@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dinput, ctx->AllocateOutput("Input@GRAD", dtype, input->shape()));
    }
    if (ctx->OutputVar("W@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dw, ctx->AllocateOutput("W@GRAD", dtype, w->shape()));
    }
    if (ctx->OutputVar("Bias@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(Tensor * dbias, ctx->AllocateOutput("Bias@GRAD", dtype, Shape({d.n})));
      ASSIGN_OR_RETURN(const ReduceGeometry sum,
                       PlanReduceTo(ctx->op().type, Shape({d.m, d.n}), Shape({d.n})));
      const cudaStream_t stream = CudaStreamOf(ctx->stream());
      RETURN_IF_ERROR(DispatchFloat(dtype, [&](auto tag) -> absl::Status {
        using T = typename decltype(tag)::type;
        CUDA_RETURN_IF_ERROR(LaunchReduceSum<T>(dout->data<T>(), dbias->data<T>(), sum, stream));
        return absl::OkStatus();
      }));
    }
    return RunFlatMatmulGrad(ctx, *input, *w, *dout, d.m, d.k, d.n, dinput, dw);
  }

 private:
  int64_t in_num_col_dims_ = 1;
};

REGISTER_KERNEL(KernelDef("fc_grad", "gpu").TypeConstraint("Input", kFloatTypes), FcGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
