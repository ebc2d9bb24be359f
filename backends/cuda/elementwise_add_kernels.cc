// gpu kernels of elementwise_add (numpy broadcasting, Y aligned by `axis`)
// and elementwise_add_grad (Out@GRAD summed down to X's and Y's shapes).
#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/broadcast_plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_device_guard.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

class ElementwiseAddKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    CudaDeviceGuard guard(ctx->place().index());
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    RETURN_IF_ERROR(CheckSameDtype(ctx, *x, *y));
    const std::string& op = ctx->op().type;
    ASSIGN_OR_RETURN(Shape out_shape, BroadcastShapes(op, x->shape(), y->shape(), axis_));
    ASSIGN_OR_RETURN(Shape y_aligned, AlignForBroadcast(op, x->shape(), y->shape(), axis_));
    ASSIGN_OR_RETURN(AddPlan plan, PlanAdd(op, x->shape(), y_aligned, out_shape));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), out_shape));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchNumeric(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* a = x->data<T>();
      const T* b = y->data<T>();
      if (plan.swap) std::swap(a, b);
      T* o = out->data<T>();
      switch (plan.kind) {
        case AddPlan::Kind::kSame:
          CUDA_RETURN_IF_ERROR(LaunchAddSame<T>(a, b, o, plan.n, stream));
          break;
        case AddPlan::Kind::kRow:
          CUDA_RETURN_IF_ERROR(LaunchAddRow<T>(a, b, o, plan.n, plan.cols, stream));
          break;
        case AddPlan::Kind::kStrided:
          CUDA_RETURN_IF_ERROR(LaunchAddStrided<T>(a, b, o, plan.geometry, stream));
          break;
      }
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
};

REGISTER_KERNEL(KernelDef("elementwise_add", "gpu").TypeConstraint("X", kNumericTypes),
                ElementwiseAddKernel);

class ElementwiseAddGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    CudaDeviceGuard guard(ctx->place().index());
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    RETURN_IF_ERROR(CheckSameDtype(ctx, *x, *y));
    const std::string& op = ctx->op().type;
    ASSIGN_OR_RETURN(Shape out_shape, BroadcastShapes(op, x->shape(), y->shape(), axis_));
    RETURN_IF_ERROR(CheckOutGrad(ctx, *dout, x->dtype(), out_shape));
    ASSIGN_OR_RETURN(Shape y_aligned, AlignForBroadcast(op, x->shape(), y->shape(), axis_));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    const struct {
      const char* arg;
      const Shape& shape;
      const Shape& aligned;
    } grads[] = {{"X@GRAD", x->shape(), x->shape()}, {"Y@GRAD", y->shape(), y_aligned}};
    for (const auto& grad : grads) {
      if (ctx->OutputVar(grad.arg) == nullptr) continue;
      ASSIGN_OR_RETURN(ReduceGeometry g, PlanReduceTo(op, out_shape, grad.aligned));
      ASSIGN_OR_RETURN(Tensor * d, ctx->AllocateOutput(grad.arg, x->dtype(), grad.shape));
      if (d->NumElements() == 0) continue;
      if (g.reduce_rank == 0) {
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d->raw_data(), dout->raw_data(), d->NumBytes(),
                                             cudaMemcpyDeviceToDevice, stream));
        continue;
      }
      RETURN_IF_ERROR(DispatchNumeric(x->dtype(), [&](auto tag) -> absl::Status {
        using T = typename decltype(tag)::type;
        CUDA_RETURN_IF_ERROR(LaunchReduceSum<T>(dout->data<T>(), d->data<T>(), g, stream));
        return absl::OkStatus();
      }));
    }
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = -1;
};

REGISTER_KERNEL(KernelDef("elementwise_add_grad", "gpu").TypeConstraint("X", kNumericTypes),
                ElementwiseAddGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
