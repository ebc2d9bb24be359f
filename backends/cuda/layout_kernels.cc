// gpu kernels of reshape, transpose, concat, split and their gradients,
// with the host kernels' registration lines, validation and messages
// (backends/common/layout_kernels.h, whose argument helpers they call).
//
// reshape and reshape_grad are the host kernels themselves: they move no
// data (the output shares the input's buffer with new dims), so they work
// on any place. transpose is one strided gather (PlanTranspose); concat and
// split copy each piece into or out of its box of the whole tensor with the
// region scatter/gather kernels (region_launchers.h); split_grad zeroes the
// pieces without a gradient.
#include "backends/common/layout_kernels.h"

#include <cuda_runtime_api.h>

#include <vector>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/region_launchers.h"
#include "backends/cuda/region_plan.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/array/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

using layout_kernels_internal::CheckBoundCount;
using layout_kernels_internal::GetConcatPieces;
using layout_kernels_internal::SplitAttrs;

REGISTER_KERNEL(KernelDef("reshape", "gpu").TypeConstraint("X", kNumericTypes), ReshapeKernel);
REGISTER_KERNEL(KernelDef("reshape_grad", "gpu").TypeConstraint("X", kNumericTypes),
                ReshapeGradKernel);

template <bool kGrad>
class TransposeKernel : public OpKernel {
 public:
  static constexpr const char* kIn = kGrad ? "Out@GRAD" : "X";
  static constexpr const char* kOut = kGrad ? "X@GRAD" : "Out";

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<std::vector<int64_t>>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor(kIn));
    const std::string& op = ctx->op().type;
    // Validates the forward permutation against the input's rank first.
    ASSIGN_OR_RETURN(Shape out, TransposeShape(op, x->shape(), axis_));
    std::vector<int64_t> axis = axis_;
    if (kGrad) {
      axis = InversePermutation(axis_);
      ASSIGN_OR_RETURN(out, TransposeShape(op, x->shape(), axis));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->AllocateOutput(kOut, x->dtype(), out));
    ASSIGN_OR_RETURN(const RegionGeometry g, PlanTranspose(op, x->shape(), axis));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchNumeric(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchGatherRegion<T>(x->data<T>(), y->data<T>(), g, stream));
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
template <bool kScatter>
absl::Status CopyPieces(KernelContext* ctx, const AxisPieces& p, const Tensor& whole,
                        const std::vector<const Tensor*>& pieces) {
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i] == nullptr) continue;
    ASSIGN_OR_RETURN(const RegionGeometry g,
                     PlanRegion(ctx->op().type, p.whole, PieceBox(p, static_cast<int>(i))));
    RETURN_IF_ERROR(DispatchNumeric(whole.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (kScatter) {
        CUDA_RETURN_IF_ERROR(
            LaunchScatterRegion<T>(pieces[i]->data<T>(), whole.data<T>(), g, stream));
      } else {
        CUDA_RETURN_IF_ERROR(
            LaunchGatherRegion<T>(whole.data<T>(), pieces[i]->data<T>(), g, stream));
      }
      return absl::OkStatus();
    }));
  }
  return absl::OkStatus();
}

class ConcatKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    std::vector<const Tensor*> xs;
    ASSIGN_OR_RETURN(const AxisPieces p, GetConcatPieces(*ctx, axis_, &xs));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", xs[0]->dtype(), p.whole));
    return CopyPieces</*kScatter=*/true>(ctx, p, *out, xs);
  }

 private:
  int64_t axis_ = 0;
};

REGISTER_KERNEL(KernelDef("concat", "gpu").TypeConstraint("X", kNumericTypes), ConcatKernel);

class ConcatGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    ASSIGN_OR_RETURN(grad_positions_,
                     GetAttr<std::vector<int64_t>>(op.attrs, "grad_positions", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    std::vector<const Tensor*> xs;
    ASSIGN_OR_RETURN(const AxisPieces p, GetConcatPieces(*ctx, axis_, &xs));
    const DataType dtype = xs[0]->dtype();
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    RETURN_IF_ERROR(
        CheckArgMeta(ctx->op().type, "Out@GRAD", dout->dtype(), dout->shape(), dtype, p.whole));
    ASSIGN_OR_RETURN(const std::vector<int64_t> positions,
                     GradPositions(ctx->op().type, grad_positions_, p.sizes.size()));
    RETURN_IF_ERROR(
        CheckBoundCount(*ctx, "output", "X@GRAD", ctx->OutputCount("X@GRAD"), positions.size()));
    std::vector<const Tensor*> grads(p.sizes.size(), nullptr);
    for (size_t j = 0; j < positions.size(); ++j) {
      ASSIGN_OR_RETURN(
          grads[positions[j]],
          ctx->AllocateOutput("X@GRAD", dtype, xs[positions[j]]->shape(), static_cast<int>(j)));
    }
    return CopyPieces</*kScatter=*/false>(ctx, p, *dout, grads);
  }

 private:
  int64_t axis_ = 0;
  std::vector<int64_t> grad_positions_;
};

REGISTER_KERNEL(KernelDef("concat_grad", "gpu").TypeConstraint("X", kNumericTypes),
                ConcatGradKernel);

class SplitKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const AxisPieces p, attrs_.PiecesOf(*ctx, *x));
    RETURN_IF_ERROR(
        CheckBoundCount(*ctx, "output", "Out", ctx->OutputCount("Out"), p.sizes.size()));
    std::vector<const Tensor*> outs;
    for (size_t i = 0; i < p.sizes.size(); ++i) {
      const int index = static_cast<int>(i);
      ASSIGN_OR_RETURN(Tensor * out,
                       ctx->AllocateOutput("Out", x->dtype(), PieceShape(p, index), index));
      outs.push_back(out);
    }
    return CopyPieces</*kScatter=*/false>(ctx, p, *x, outs);
  }

 private:
  SplitAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("split", "gpu").TypeConstraint("X", kNumericTypes), SplitKernel);

class SplitGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    RETURN_IF_ERROR(attrs_.Read(op));
    ASSIGN_OR_RETURN(grad_positions_,
                     GetAttr<std::vector<int64_t>>(op.attrs, "grad_positions", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const AxisPieces p, attrs_.PiecesOf(*ctx, *x));
    const std::string& op = ctx->op().type;
    ASSIGN_OR_RETURN(const std::vector<int64_t> positions,
                     GradPositions(op, grad_positions_, p.sizes.size()));
    RETURN_IF_ERROR(
        CheckBoundCount(*ctx, "input", "Out@GRAD", ctx->InputCount("Out@GRAD"), positions.size()));
    std::vector<const Tensor*> grads(p.sizes.size(), nullptr);
    for (size_t j = 0; j < positions.size(); ++j) {
      const int index = static_cast<int>(j);
      ASSIGN_OR_RETURN(const Tensor* d, ctx->InputTensor("Out@GRAD", index));
      RETURN_IF_ERROR(CheckArgMeta(op, absl::StrCat("Out@GRAD[", j, "]"), d->dtype(), d->shape(),
                                   x->dtype(), PieceShape(p, static_cast<int>(positions[j]))));
      grads[positions[j]] = d;
    }
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    if (positions.size() < p.sizes.size() && dx->NumBytes() > 0) {
      CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(dx->raw_data(), 0, dx->NumBytes(), CudaStreamOf(ctx->stream())));
    }
    return CopyPieces</*kScatter=*/true>(ctx, p, *dx, grads);
  }

 private:
  SplitAttrs attrs_;
  std::vector<int64_t> grad_positions_;
};

REGISTER_KERNEL(KernelDef("split_grad", "gpu").TypeConstraint("X", kNumericTypes), SplitGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
