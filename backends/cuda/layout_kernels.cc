// gpu kernels of reshape, transpose, concat, split and their gradients,
// with the host kernels' registration lines and, through the shared
// prologues (ops/array/prologues.h), their validation and
// messages.
//
// reshape and reshape_grad are the host's kernels (backends/common/
// reshape_kernels.h): they move no data (the output shares the input's
// buffer with new dims), so they work on any place. transpose is one strided gather
// (PlanTranspose); concat and split copy each piece into or out of its box of the whole tensor with
// the region scatter/gather kernels (region_launchers.h); split_grad zeroes the pieces without a
// gradient.
#include <cuda_runtime_api.h>

#include <vector>

#include "backends/common/reshape_kernels.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/region_launchers.h"
#include "backends/cuda/region_plan.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/array/prologues.h"
#include "ops/array/shape_fns.h"
#include "ops/math/prologues.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

REGISTER_KERNEL(ReshapeKernel::Contract("gpu"), ReshapeKernel);
REGISTER_KERNEL(ReshapeGradKernel::Contract("gpu"), ReshapeGradKernel);

template <bool kGrad>
class TransposeKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::TransposeArgs a,
                     prologue::GetTransposeArgs(ctx, axis_, kGrad));
    ASSIGN_OR_RETURN(const RegionGeometry g, PlanTranspose(ctx->op().type, a.x->shape(), a.axis));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchNumeric(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchGatherRegion<T>(a.x->data<T>(), a.out->data<T>(), g, stream));
      return absl::OkStatus();
    });
  }

 private:
  std::vector<int64_t> axis_;
};

REGISTER_KERNEL(KernelDef("transpose", "gpu").TypeConstraint("X", kNumericTypes),
                TransposeKernel<false>);
REGISTER_KERNEL(KernelDef("transpose_grad", "gpu").TypeConstraint("Out@GRAD", kNumericTypes),
                TransposeKernel<true>);

// The box piece `i` of `p` occupies in p.whole.
Box PieceBox(const AxisPieces& p, int i) {
  Box box{std::vector<int64_t>(p.whole.rank(), 0), PieceShape(p, i)};
  for (int j = 0; j < i; ++j) box.offsets[p.axis] += p.sizes[j];
  return box;
}

// Copies every non-null piece of `pieces` into its box of `whole`
// (scatter), or its box of `whole` into it (gather).
template <bool kScatter, typename TensorPtr>
absl::Status CopyPieces(KernelContext* ctx, const AxisPieces& p, const Tensor& whole,
                        const std::vector<TensorPtr>& pieces) {
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Tensor* piece = pieces[i];
    if (piece == nullptr) continue;
    ASSIGN_OR_RETURN(const RegionGeometry g,
                     PlanRegion(ctx->op().type, p.whole, PieceBox(p, static_cast<int>(i))));
    RETURN_IF_ERROR(DispatchNumericWith16Bit(whole.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (kScatter) {
        CUDA_RETURN_IF_ERROR(LaunchScatterRegion<T>(piece->data<T>(), whole.data<T>(), g, stream));
      } else {
        CUDA_RETURN_IF_ERROR(LaunchGatherRegion<T>(whole.data<T>(), piece->data<T>(), g, stream));
      }
      return absl::OkStatus();
    }));
  }
  return absl::OkStatus();
}

class ConcatKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op, /*grad=*/false); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ConcatArgs a, prologue::GetConcatArgs(ctx, attrs_.axis));
    return CopyPieces</*kScatter=*/true>(ctx, a.p, *a.out, a.xs);
  }

 private:
  prologue::ConcatAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("concat", "gpu").TypeConstraint("X", kNumericTypesWith16Bit),
                ConcatKernel);

class ConcatGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op, /*grad=*/true); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ConcatGradArgs a, prologue::GetConcatGradArgs(ctx, attrs_));
    return CopyPieces</*kScatter=*/false>(ctx, a.p, *a.dout, a.grads);
  }

 private:
  prologue::ConcatAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("concat_grad", "gpu").TypeConstraint("X", kNumericTypesWith16Bit),
                ConcatGradKernel);

class SplitKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op, /*grad=*/false); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::SplitArgs a, prologue::GetSplitArgs(ctx, attrs_));
    return CopyPieces</*kScatter=*/false>(ctx, a.p, *a.x, a.outs);
  }

 private:
  prologue::SplitAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("split", "gpu").TypeConstraint("X", kNumericTypes), SplitKernel);

class SplitGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op, /*grad=*/true); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::SplitGradArgs a, prologue::GetSplitGradArgs(ctx, attrs_));
    if (a.positions.size() < a.p.sizes.size() && a.dx->NumBytes() > 0) {
      CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(a.dx->raw_data(), 0, a.dx->NumBytes(), CudaStreamOf(ctx->stream())));
    }
    return CopyPieces</*kScatter=*/true>(ctx, a.p, *a.dx, a.grads);
  }

 private:
  prologue::SplitAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("split_grad", "gpu").TypeConstraint("X", kNumericTypes), SplitGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
