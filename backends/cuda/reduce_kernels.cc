// gpu kernels of reduce_sum, reduce_mean and their gradients, with the host
// kernels' registration lines and, through the shared prologues
// (ops/math/prologues.h), their validation and messages.
//
// The forward op sums X over the reduced dims with LaunchReduceSum (a block
// per output element and a shared-memory tree sum for long sums, a thread
// per output element for short ones; float32 accumulates in double), then
// divides by the element count in T for a mean, as the host does. The
// gradient broadcasts Out@GRAD back over X (divided by the count for a
// mean).
#include <cuda_runtime_api.h>

#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/broadcast_plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/prologues.h"

namespace tandem {
namespace cuda {
namespace {

using prologue::ReduceAttrs;

template <bool kMean>
class ReduceKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const ReduceDims r, prologue::GetReduceDims(*ctx, x->shape(), attrs_, kMean));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), r.out));
    ASSIGN_OR_RETURN(ReduceGeometry g, PlanReduceTo(ctx->op().type, x->shape(), r.kept));
    if (kMean) g.divisor = r.count;
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchReduceSum<T>(x->data<T>(), out->data<T>(), g, stream));
      return absl::OkStatus();
    });
  }

 private:
  ReduceAttrs attrs_;
};

template <bool kMean>
class ReduceGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ReduceGradArgs a,
                     prologue::GetReduceGradArgs(ctx, attrs_, kMean));
    if (a.dx->NumElements() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(const AddGeometry g, PlanBroadcastTo(ctx->op().type, a.r.kept, a.x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchBroadcastDivide<T>(a.dout->data<T>(), a.dx->data<T>(), g,
                                                    kMean ? a.r.count : 1, stream));
      return absl::OkStatus();
    });
  }

 private:
  ReduceAttrs attrs_;
};

#define TANDEM_REDUCE(name, mean)                                                               \
  REGISTER_KERNEL(KernelDef(name, "gpu").TypeConstraint("X", kFloatTypes), ReduceKernel<mean>); \
  REGISTER_KERNEL(KernelDef(name "_grad", "gpu").TypeConstraint("X", kFloatTypes),              \
                  ReduceGradKernel<mean>)
TANDEM_REDUCE("reduce_sum", false);
TANDEM_REDUCE("reduce_mean", true);
#undef TANDEM_REDUCE

}  // namespace
}  // namespace cuda
}  // namespace tandem
