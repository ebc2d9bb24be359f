// gpu kernels of square_error_cost(_grad) and mean(_grad), validated by the
// prologues they share with the host kernels (ops/loss/prologues.h).
#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "backends/common/axis_lines.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/loss_launchers.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/loss/prologues.h"
#include "ops/loss/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

class SquareErrorCostKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::SquareErrorCostArgs a, prologue::GetSquareErrorCostArgs(ctx));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchSquareErrorCost<T>(a.x->data<T>(), a.y->data<T>(),
                                                    a.out->data<T>(), a.x->NumElements(), stream));
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
    ASSIGN_OR_RETURN(const prologue::SquareErrorCostGradArgs a,
                     prologue::GetSquareErrorCostGradArgs(ctx));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchSquareErrorCostGrad<T>(
          a.x->data<T>(), a.y->data<T>(), a.dout->data<T>(),
          a.dx == nullptr ? nullptr : a.dx->data<T>(), a.dy == nullptr ? nullptr : a.dy->data<T>(),
          a.x->NumElements(), stream));
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
    ASSIGN_OR_RETURN(const prologue::MeanArgs a, prologue::GetMeanArgs(ctx));
    const Tensor* x = a.x;
    Tensor* out = a.out;
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

// The partial sums (the block counter is the kernel's own, kept).
int64_t MeanScratch(const OpDesc&, const ArgMetas& in, const ArgMetas&) {
  const TensorMeta* x = FirstMeta(in, "X");
  if (x == nullptr) return 0;
  return MeanPartCount(x->shape.num_elements()) * static_cast<int64_t>(sizeof(double));
}

REGISTER_KERNEL(KernelDef("mean", "gpu").TypeConstraint("X", kFloatTypes).Scratch(MeanScratch),
                MeanKernel);

class MeanGradKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MeanGradArgs a, prologue::GetMeanGradArgs(ctx));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(
          LaunchMeanGrad<T>(a.dout->data<T>(), a.dx->data<T>(), a.x->NumElements(), stream));
      return absl::OkStatus();
    });
  }
};

REGISTER_KERNEL(KernelDef("mean_grad", "gpu").TypeConstraint("X", kFloatTypes), MeanGradKernel);

// A warp per line of the normalised axis, then one block that adds the
// line sums (loss_launchers.h): the host kernels' arithmetic, sums in
// another fixed order.
class L2NormalizeSquareErrorMeanKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::L2NormalizeSquareErrorMeanArgs a,
                     prologue::GetL2NormalizeSquareErrorMeanArgs(ctx, attrs_.axis, /*grad=*/false));
    const AxisLines g = AxisLines::Around(a.x->shape(), a.axis);
    ASSIGN_OR_RETURN(
        const Tensor line_sums,
        AllocateScratch(ctx, DataType::kFloat64, Shape({g.num_lines()}), "the lines' sums"));
    return DispatchFloat(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchL2NormalizeSquareErrorMean<T>(
          a.x->data<T>(), a.label->data<T>(), g.outer, g.n, g.inner, attrs_.epsilon,
          line_sums.data<double>(), a.out->data<T>(), CudaStreamOf(ctx->stream())));
      return absl::OkStatus();
    });
  }

 private:
  prologue::L2NormalizeSquareErrorMeanAttrs attrs_;
};

// The lines' sums: one double per line of X around attr axis.
int64_t LineSumsScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas&) {
  const TensorMeta* x = FirstMeta(in, "X");
  absl::StatusOr<int64_t> axis = GetAttr<int64_t>(op.attrs, "axis", op.type);
  if (x == nullptr || !axis.ok()) return 0;
  absl::StatusOr<int> a = NormalizeAxis(op.type, "X", x->shape, *axis);
  if (!a.ok()) return 0;
  return AxisLines::Around(x->shape, *a).num_lines() * static_cast<int64_t>(sizeof(double));
}

REGISTER_KERNEL(KernelDef("l2_normalize_square_error_mean", "gpu")
                    .TypeConstraint("X", kFloatTypes)
                    .Scratch(LineSumsScratch),
                L2NormalizeSquareErrorMeanKernel);

class L2NormalizeSquareErrorMeanGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::L2NormalizeSquareErrorMeanArgs a,
                     prologue::GetL2NormalizeSquareErrorMeanArgs(ctx, attrs_.axis, /*grad=*/true));
    const AxisLines g = AxisLines::Around(a.x->shape(), a.axis);
    return DispatchFloat(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchL2NormalizeSquareErrorMeanGrad<T>(
          a.x->data<T>(), a.label->data<T>(), g.outer, g.n, g.inner, attrs_.epsilon,
          a.dout->data<T>(), a.dx == nullptr ? nullptr : a.dx->data<T>(),
          a.dlabel == nullptr ? nullptr : a.dlabel->data<T>(), CudaStreamOf(ctx->stream())));
      return absl::OkStatus();
    });
  }

 private:
  prologue::L2NormalizeSquareErrorMeanAttrs attrs_;
};

REGISTER_KERNEL(
    KernelDef("l2_normalize_square_error_mean_grad", "gpu").TypeConstraint("X", kFloatTypes),
    L2NormalizeSquareErrorMeanGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
