// The kernels of the layout ops (ops/array) for every backend whose memory
// the host can address: reshape(_grad), transpose(_grad), concat(_grad) and
// split(_grad). Each is written once, templated on an execution policy
// (serial_policy.h). A backend registers them under its device type with
// one line:
//
//   // in an anonymous namespace of the backend's kernel .cc file
//   const LayoutKernelsRegistrar<SerialPolicy> layout_kernels("sim");
//
// RegisterLayoutKernels holds the registration lines (all arguments in
// device memory; X, or Out@GRAD for transpose_grad: float32, float64, int32,
// int64). reshape and reshape_grad move no data: the output shares the
// input's buffer with new dims. Kernels validate their inputs with
// ops/array/shape_fns.h (InvalidArgument naming the op, the shapes and the
// attributes), compute synchronously through the policy and never copy
// between places. Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_LAYOUT_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_LAYOUT_KERNELS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/common/layout.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "ops/array/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace layout_kernels_internal {

// The shapes of the X list of concat(_grad), checking that every X has
// X[0]'s dtype, and their geometry along attr axis.
absl::StatusOr<AxisPieces> GetConcatPieces(const KernelContext& ctx, int64_t axis,
                                           std::vector<const Tensor*>* xs);

// The attrs of split(_grad) and the pieces they cut X into.
struct SplitAttrs {
  int64_t axis = 0, num = 0;
  std::vector<int64_t> sections;

  absl::Status Read(const OpDesc& op);
  absl::StatusOr<AxisPieces> PiecesOf(const KernelContext& ctx, const Tensor& x) const {
    return SplitGeometry(ctx.op().type, x.shape(), axis, num, sections);
  }
};

// InvalidArgument unless `count` variables are bound to argument `arg`
// (input or output, per `what`).
absl::Status CheckBoundCount(const KernelContext& ctx, absl::string_view what,
                             absl::string_view arg, int bound, size_t count);

}  // namespace layout_kernels_internal

// Out = X with dims attr shape (0 copies X's dim, one -1 is inferred;
// ReshapeShape), sharing X's buffer: no element moves.
class ReshapeKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(shape_, GetAttr<std::vector<int64_t>>(op.attrs, "shape", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Shape out, ReshapeShape(ctx->op().type, x->shape(), shape_));
    return ctx->SetOutput("Out", x->Reshaped(out));
  }

 private:
  std::vector<int64_t> shape_;
};

// X@GRAD = Out@GRAD with X's dims, sharing Out@GRAD's buffer. Out@GRAD must
// have X's dtype and element count.
class ReshapeGradKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    if (dout->dtype() != x->dtype() || dout->NumElements() != x->NumElements()) {
      return ctx->InvalidArgument(absl::StrCat("Out@GRAD ", DataTypeName(dout->dtype()),
                                               dout->shape().ToString(), " does not match X ",
                                               DataTypeName(x->dtype()), x->shape().ToString(),
                                               " (same dtype and element count needed)"));
    }
    return ctx->SetOutput("X@GRAD", dout->Reshaped(x->shape()));
  }
};

// Out = X transposed: Out.dim(k) = X.dim(axis[k]) (attr axis, a
// permutation of X's dims). For transpose_grad (`kGrad`), X@GRAD =
// Out@GRAD transposed by the inverse permutation.
template <typename Policy, bool kGrad>
class TransposeKernel final : public OpKernel {
 public:
  using Types = NumericTypes;
  static constexpr const char* kIn = kGrad ? "Out@GRAD" : "X";
  static constexpr const char* kOut = kGrad ? "X@GRAD" : "Out";

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<std::vector<int64_t>>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor(kIn));
    // Validates the forward permutation against the input's rank first.
    ASSIGN_OR_RETURN(Shape out, TransposeShape(ctx->op().type, x->shape(), axis_));
    std::vector<int64_t> axis = axis_;
    if (kGrad) {
      axis = InversePermutation(axis_);
      ASSIGN_OR_RETURN(out, TransposeShape(ctx->op().type, x->shape(), axis));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->AllocateOutput(kOut, x->dtype(), out));
    return DispatchType(Types(), x->dtype(), *ctx, kIn, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Transpose<T, Policy>(x->data<T>(), x->shape(), axis, y->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  std::vector<int64_t> axis_;
};

// Out = the X list (same dtype and rank, equal dims except along attr
// axis; negative counts from the end) joined along axis, in order.
template <typename Policy>
class ConcatKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    std::vector<const Tensor*> xs;
    ASSIGN_OR_RETURN(const AxisPieces p,
                     layout_kernels_internal::GetConcatPieces(*ctx, axis_, &xs));
    const DataType dtype = xs[0]->dtype();
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", dtype, p.whole));
    return DispatchType(Types(), dtype, *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<const T*> pieces;
      for (const Tensor* x : xs) pieces.push_back(x->data<T>());
      JoinPieces<T, Policy>(p, pieces, out->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = 0;
};

// X@GRAD[j] = the part of Out@GRAD that X[grad_positions[j]] occupies
// (attr grad_positions, increasing; empty: every X). X is read for its
// shapes only; Out@GRAD must have the concatenated shape and X's dtype.
template <typename Policy>
class ConcatGradKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    ASSIGN_OR_RETURN(grad_positions_,
                     GetAttr<std::vector<int64_t>>(op.attrs, "grad_positions", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    std::vector<const Tensor*> xs;
    ASSIGN_OR_RETURN(const AxisPieces p,
                     layout_kernels_internal::GetConcatPieces(*ctx, axis_, &xs));
    const DataType dtype = xs[0]->dtype();
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    RETURN_IF_ERROR(
        CheckArgMeta(ctx->op().type, "Out@GRAD", dout->dtype(), dout->shape(), dtype, p.whole));
    ASSIGN_OR_RETURN(const std::vector<int64_t> positions,
                     GradPositions(ctx->op().type, grad_positions_, p.sizes.size()));
    RETURN_IF_ERROR(layout_kernels_internal::CheckBoundCount(
        *ctx, "output", "X@GRAD", ctx->OutputCount("X@GRAD"), positions.size()));
    std::vector<Tensor*> grads(p.sizes.size(), nullptr);
    for (size_t j = 0; j < positions.size(); ++j) {
      ASSIGN_OR_RETURN(
          grads[positions[j]],
          ctx->AllocateOutput("X@GRAD", dtype, xs[positions[j]]->shape(), static_cast<int>(j)));
    }
    return DispatchType(Types(), dtype, *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<T*> pieces;
      for (Tensor* g : grads) pieces.push_back(g == nullptr ? nullptr : g->data<T>());
      CutPieces<T, Policy>(p, dout->data<T>(), pieces);
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = 0;
  std::vector<int64_t> grad_positions_;
};

// Out[i] = piece i of X along attr axis: num > 0 equal pieces, or the
// sizes in sections (one -1 takes the rest). Out binds one variable per
// piece.
template <typename Policy>
class SplitKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const AxisPieces p, attrs_.PiecesOf(*ctx, *x));
    RETURN_IF_ERROR(layout_kernels_internal::CheckBoundCount(
        *ctx, "output", "Out", ctx->OutputCount("Out"), p.sizes.size()));
    std::vector<Tensor*> outs;
    for (size_t i = 0; i < p.sizes.size(); ++i) {
      const int index = static_cast<int>(i);
      ASSIGN_OR_RETURN(Tensor * out,
                       ctx->AllocateOutput("Out", x->dtype(), PieceShape(p, index), index));
      outs.push_back(out);
    }
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<T*> pieces;
      for (Tensor* out : outs) pieces.push_back(out->data<T>());
      CutPieces<T, Policy>(p, x->data<T>(), pieces);
      return absl::OkStatus();
    });
  }

 private:
  layout_kernels_internal::SplitAttrs attrs_;
};

// X@GRAD = the pieces of X (split's attrs) joined along axis, piece
// grad_positions[j] being Out@GRAD[j] (which must have that piece's shape
// and X's dtype) and every other piece zeros. X is read for its shape only.
template <typename Policy>
class SplitGradKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Init(const OpDesc& op) override {
    RETURN_IF_ERROR(attrs_.Read(op));
    ASSIGN_OR_RETURN(grad_positions_,
                     GetAttr<std::vector<int64_t>>(op.attrs, "grad_positions", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const AxisPieces p, attrs_.PiecesOf(*ctx, *x));
    ASSIGN_OR_RETURN(const std::vector<int64_t> positions,
                     GradPositions(ctx->op().type, grad_positions_, p.sizes.size()));
    RETURN_IF_ERROR(layout_kernels_internal::CheckBoundCount(
        *ctx, "input", "Out@GRAD", ctx->InputCount("Out@GRAD"), positions.size()));
    std::vector<const Tensor*> grads(p.sizes.size(), nullptr);
    for (size_t j = 0; j < positions.size(); ++j) {
      const int index = static_cast<int>(j);
      ASSIGN_OR_RETURN(const Tensor* d, ctx->InputTensor("Out@GRAD", index));
      RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, absl::StrCat("Out@GRAD[", j, "]"), d->dtype(),
                                   d->shape(), x->dtype(),
                                   PieceShape(p, static_cast<int>(positions[j]))));
      grads[positions[j]] = d;
    }
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<const T*> pieces;
      for (const Tensor* g : grads) pieces.push_back(g == nullptr ? nullptr : g->data<T>());
      JoinPieces<T, Policy>(p, pieces, dx->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  layout_kernels_internal::SplitAttrs attrs_;
  std::vector<int64_t> grad_positions_;
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterLayoutKernels(const std::string& device_type) {
  KernelRegistry& registry = KernelRegistry::Global();
  const std::vector<DataType> types = NumericTypes::DataTypes();
  registry.Register(KernelDef("reshape", device_type).TypeConstraint("X", types),
                    MakeKernelFactory<ReshapeKernel>());
  registry.Register(KernelDef("reshape_grad", device_type).TypeConstraint("X", types),
                    MakeKernelFactory<ReshapeGradKernel>());
  registry.Register(KernelDef("transpose", device_type).TypeConstraint("X", types),
                    MakeKernelFactory<TransposeKernel<Policy, false>>());
  registry.Register(KernelDef("transpose_grad", device_type).TypeConstraint("Out@GRAD", types),
                    MakeKernelFactory<TransposeKernel<Policy, true>>());
  registry.Register(KernelDef("concat", device_type).TypeConstraint("X", types),
                    MakeKernelFactory<ConcatKernel<Policy>>());
  registry.Register(KernelDef("concat_grad", device_type).TypeConstraint("X", types),
                    MakeKernelFactory<ConcatGradKernel<Policy>>());
  registry.Register(KernelDef("split", device_type).TypeConstraint("X", types),
                    MakeKernelFactory<SplitKernel<Policy>>());
  registry.Register(KernelDef("split_grad", device_type).TypeConstraint("X", types),
                    MakeKernelFactory<SplitGradKernel<Policy>>());
}

// Calls RegisterLayoutKernels<Policy>(device_type) during static
// initialisation; define one in the backend's kernel .cc file, whose
// cc_library must have alwayslink = True.
template <typename Policy>
struct LayoutKernelsRegistrar {
  explicit LayoutKernelsRegistrar(const std::string& device_type) {
    RegisterLayoutKernels<Policy>(device_type);
  }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_LAYOUT_KERNELS_H_
