// gpu kernels of fc and fc_grad: the products on cuBLAS (gemm.h), the bias
// added to every row and its gradient summed over the rows by the
// broadcasting kernels. Registration lines are the host kernels'; validation
// and messages come from the shared prologues (backends/common/nn_prologues.h).
#include <cuda_runtime_api.h>

#include "backends/common/math_prologues.h"
#include "backends/common/nn_prologues.h"
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
    return prologue::ReadAttr(op, "in_num_col_dims", &in_num_col_dims_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::FcArgs a, prologue::GetFcArgs(ctx, in_num_col_dims_));
    const FlatMatmulDims& d = a.d;
    RETURN_IF_ERROR(RunFlatMatmul(ctx, *a.input, *a.w, d.m, d.k, d.n, a.out));
    if (a.bias == nullptr) return absl::OkStatus();
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(a.input->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchBinaryRow<T>(BinaryOp::kAdd, a.out->data<T>(), a.bias->data<T>(),
                                              /*row_is_x=*/false, a.out->data<T>(), d.m * d.n, d.n,
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
    return prologue::ReadAttr(op, "in_num_col_dims", &in_num_col_dims_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::FcGradArgs a, prologue::GetFcGradArgs(ctx, in_num_col_dims_));
    const FlatMatmulDims& d = a.d;
    if (a.dbias != nullptr) {
      ASSIGN_OR_RETURN(const ReduceGeometry sum,
                       PlanReduceTo(ctx->op().type, Shape({d.m, d.n}), Shape({d.n})));
      const cudaStream_t stream = CudaStreamOf(ctx->stream());
      RETURN_IF_ERROR(DispatchFloat(a.input->dtype(), [&](auto tag) -> absl::Status {
        using T = typename decltype(tag)::type;
        CUDA_RETURN_IF_ERROR(
            LaunchReduceSum<T>(a.dout->data<T>(), a.dbias->data<T>(), sum, stream));
        return absl::OkStatus();
      }));
    }
    return RunFlatMatmulGrad(ctx, *a.input, *a.w, *a.dout, d.m, d.k, d.n, a.dinput, a.dw);
  }

 private:
  int64_t in_num_col_dims_ = 1;
};

REGISTER_KERNEL(KernelDef("fc_grad", "gpu").TypeConstraint("Input", kFloatTypes), FcGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
