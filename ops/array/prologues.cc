#include "ops/array/prologues.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "framework/base/status_macros.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace prologue {
namespace {

// InvalidArgument unless `count` variables are bound to argument `arg`
// (input or output, per `what`).
absl::Status CheckBoundCount(const KernelContext& ctx, absl::string_view what,
                             absl::string_view arg, int bound, size_t count) {
  if (bound == static_cast<int>(count)) return absl::OkStatus();
  return ctx.InvalidArgument(
      absl::StrCat(what, " ", arg, " has ", bound, " variables, expected ", count));
}

// The shapes of the X list of concat(_grad), checking that every X has
// X[0]'s dtype, and their geometry along `axis`.
absl::StatusOr<AxisPieces> GetConcatPieces(const KernelContext& ctx, int64_t axis,
                                           std::vector<const Tensor*>* xs) {
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx.InputCount("X"); ++i) {
    ASSIGN_OR_RETURN(const Tensor* x, ctx.InputTensor("X", i));
    if (!xs->empty() && x->dtype() != (*xs)[0]->dtype()) {
      return ctx.InvalidArgument(absl::StrCat("X[", i, "] is ", DataTypeName(x->dtype()),
                                              " but X[0] is ", DataTypeName((*xs)[0]->dtype())));
    }
    xs->push_back(x);
    shapes.push_back(x->shape());
  }
  return ConcatGeometry(ctx.op().type, shapes, axis);
}

}  // namespace

absl::StatusOr<TransposeArgs> GetTransposeArgs(KernelContext* ctx,
                                               const std::vector<int64_t>& axis_attr, bool grad) {
  TransposeArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor(grad ? "Out@GRAD" : "X"));
  const std::string& op = ctx->op().type;
  // Validates the forward permutation against the input's rank first.
  ASSIGN_OR_RETURN(Shape out, TransposeShape(op, a.x->shape(), axis_attr));
  a.axis = axis_attr;
  if (grad) {
    a.axis = InversePermutation(axis_attr);
    ASSIGN_OR_RETURN(out, TransposeShape(op, a.x->shape(), a.axis));
  }
  ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput(grad ? "X@GRAD" : "Out", a.x->dtype(), out));
  return a;
}

absl::Status ConcatAttrs::Read(const OpDesc& op, bool grad) {
  ASSIGN_OR_RETURN(axis, GetAttr<int64_t>(op.attrs, "axis", op.type));
  if (grad) {
    ASSIGN_OR_RETURN(grad_positions,
                     GetAttr<std::vector<int64_t>>(op.attrs, "grad_positions", op.type));
  }
  return absl::OkStatus();
}

absl::StatusOr<ConcatArgs> GetConcatArgs(KernelContext* ctx, int64_t axis) {
  ConcatArgs a;
  ASSIGN_OR_RETURN(a.p, GetConcatPieces(*ctx, axis, &a.xs));
  ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput("Out", a.xs[0]->dtype(), a.p.whole));
  return a;
}

absl::StatusOr<ConcatGradArgs> GetConcatGradArgs(KernelContext* ctx, const ConcatAttrs& attrs) {
  ConcatGradArgs a;
  ASSIGN_OR_RETURN(a.p, GetConcatPieces(*ctx, attrs.axis, &a.xs));
  const DataType dtype = a.xs[0]->dtype();
  const std::string& op = ctx->op().type;
  ASSIGN_OR_RETURN(a.dout, ctx->InputTensor("Out@GRAD"));
  RETURN_IF_ERROR(CheckArgMeta(op, "Out@GRAD", a.dout->dtype(), a.dout->shape(), dtype, a.p.whole));
  ASSIGN_OR_RETURN(const std::vector<int64_t> positions,
                   GradPositions(op, attrs.grad_positions, a.p.sizes.size()));
  RETURN_IF_ERROR(
      CheckBoundCount(*ctx, "output", "X@GRAD", ctx->OutputCount("X@GRAD"), positions.size()));
  a.grads.assign(a.p.sizes.size(), nullptr);
  for (size_t j = 0; j < positions.size(); ++j) {
    ASSIGN_OR_RETURN(
        a.grads[positions[j]],
        ctx->AllocateOutput("X@GRAD", dtype, a.xs[positions[j]]->shape(), static_cast<int>(j)));
  }
  return a;
}

absl::Status SplitAttrs::Read(const OpDesc& op, bool grad) {
  ASSIGN_OR_RETURN(axis, GetAttr<int64_t>(op.attrs, "axis", op.type));
  ASSIGN_OR_RETURN(num, GetAttr<int64_t>(op.attrs, "num", op.type));
  ASSIGN_OR_RETURN(sections, GetAttr<std::vector<int64_t>>(op.attrs, "sections", op.type));
  if (grad) {
    ASSIGN_OR_RETURN(grad_positions,
                     GetAttr<std::vector<int64_t>>(op.attrs, "grad_positions", op.type));
  }
  return absl::OkStatus();
}

absl::StatusOr<SplitArgs> GetSplitArgs(KernelContext* ctx, const SplitAttrs& attrs) {
  SplitArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.p, attrs.PiecesOf(*ctx, *a.x));
  RETURN_IF_ERROR(
      CheckBoundCount(*ctx, "output", "Out", ctx->OutputCount("Out"), a.p.sizes.size()));
  for (size_t i = 0; i < a.p.sizes.size(); ++i) {
    const int index = static_cast<int>(i);
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx->AllocateOutput("Out", a.x->dtype(), PieceShape(a.p, index), index));
    a.outs.push_back(out);
  }
  return a;
}

absl::StatusOr<SplitGradArgs> GetSplitGradArgs(KernelContext* ctx, const SplitAttrs& attrs) {
  SplitGradArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.p, attrs.PiecesOf(*ctx, *a.x));
  const std::string& op = ctx->op().type;
  ASSIGN_OR_RETURN(a.positions, GradPositions(op, attrs.grad_positions, a.p.sizes.size()));
  RETURN_IF_ERROR(
      CheckBoundCount(*ctx, "input", "Out@GRAD", ctx->InputCount("Out@GRAD"), a.positions.size()));
  a.grads.assign(a.p.sizes.size(), nullptr);
  for (size_t j = 0; j < a.positions.size(); ++j) {
    const int index = static_cast<int>(j);
    ASSIGN_OR_RETURN(const Tensor* d, ctx->InputTensor("Out@GRAD", index));
    RETURN_IF_ERROR(CheckArgMeta(op, absl::StrCat("Out@GRAD[", j, "]"), d->dtype(), d->shape(),
                                 a.x->dtype(), PieceShape(a.p, static_cast<int>(a.positions[j]))));
    a.grads[a.positions[j]] = d;
  }
  ASSIGN_OR_RETURN(a.dx, ctx->AllocateOutput("X@GRAD", a.x->dtype(), a.x->shape()));
  return a;
}

}  // namespace prologue
}  // namespace tandem
