#include "ops/loss/prologues.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "ops/math/prologues.h"

namespace tandem {
namespace prologue {
namespace {

TensorMeta MetaOf(const Tensor& t) { return TensorMeta{t.dtype(), t.shape()}; }

}  // namespace

absl::StatusOr<SquareErrorCostArgs> GetSquareErrorCostArgs(KernelContext* ctx) {
  SquareErrorCostArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.y, ctx->InputTensor("Y"));
  ASSIGN_OR_RETURN(const TensorMeta m,
                   SquareErrorCostMeta(ctx->op().type, MetaOf(*a.x), MetaOf(*a.y)));
  ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput("Out", m.dtype, m.shape));
  return a;
}

absl::StatusOr<SquareErrorCostGradArgs> GetSquareErrorCostGradArgs(KernelContext* ctx) {
  SquareErrorCostGradArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.y, ctx->InputTensor("Y"));
  ASSIGN_OR_RETURN(a.dout, ctx->InputTensor("Out@GRAD"));
  const std::string& op = ctx->op().type;
  ASSIGN_OR_RETURN(const TensorMeta m, SquareErrorCostMeta(op, MetaOf(*a.x), MetaOf(*a.y)));
  RETURN_IF_ERROR(CheckArgMeta(op, "Out@GRAD", a.dout->dtype(), a.dout->shape(), m.dtype, m.shape));
  ASSIGN_OR_RETURN(a.dx, AllocateIfBound(ctx, "X@GRAD", m.dtype, m.shape));
  ASSIGN_OR_RETURN(a.dy, AllocateIfBound(ctx, "Y@GRAD", m.dtype, m.shape));
  return a;
}

absl::StatusOr<L2NormalizeSquareErrorMeanArgs> GetL2NormalizeSquareErrorMeanArgs(KernelContext* ctx,
                                                                                 int64_t axis,
                                                                                 bool grad) {
  L2NormalizeSquareErrorMeanArgs a;
  const std::string& op = ctx->op().type;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.label, ctx->InputTensor("Label"));
  RETURN_IF_ERROR(CheckFloating(op, "X", a.x->dtype()));
  RETURN_IF_ERROR(
      CheckArgMeta(op, "Label", a.label->dtype(), a.label->shape(), a.x->dtype(), a.x->shape()));
  ASSIGN_OR_RETURN(a.axis, NormalizeAxis(op, "X", a.x->shape(), axis));
  ASSIGN_OR_RETURN(const TensorMeta m, MeanMeta(op, MetaOf(*a.x)));
  if (!grad) {
    ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput("Out", m.dtype, m.shape));
    return a;
  }
  ASSIGN_OR_RETURN(a.dout, ctx->InputTensor("Out@GRAD"));
  RETURN_IF_ERROR(CheckArgMeta(op, "Out@GRAD", a.dout->dtype(), a.dout->shape(), m.dtype, m.shape));
  ASSIGN_OR_RETURN(a.dx, AllocateIfBound(ctx, "X@GRAD", a.x->dtype(), a.x->shape()));
  ASSIGN_OR_RETURN(a.dlabel, AllocateIfBound(ctx, "Label@GRAD", a.x->dtype(), a.x->shape()));
  return a;
}

absl::Status L2NormalizeSquareErrorMeanAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(axis, GetAttr<int64_t>(op.attrs, "axis", op.type));
  ASSIGN_OR_RETURN(epsilon, GetAttr<double>(op.attrs, "epsilon", op.type));
  return absl::OkStatus();
}

absl::StatusOr<MeanArgs> GetMeanArgs(KernelContext* ctx) {
  MeanArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(const TensorMeta m, MeanMeta(ctx->op().type, MetaOf(*a.x)));
  ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput("Out", m.dtype, m.shape));
  return a;
}

absl::StatusOr<MeanGradArgs> GetMeanGradArgs(KernelContext* ctx) {
  MeanGradArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.dout, ctx->InputTensor("Out@GRAD"));
  const std::string& op = ctx->op().type;
  ASSIGN_OR_RETURN(const TensorMeta m, MeanMeta(op, MetaOf(*a.x)));
  RETURN_IF_ERROR(CheckArgMeta(op, "Out@GRAD", a.dout->dtype(), a.dout->shape(), m.dtype, m.shape));
  ASSIGN_OR_RETURN(a.dx, ctx->AllocateOutput("X@GRAD", a.x->dtype(), a.x->shape()));
  return a;
}

absl::Status CrossEntropyAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(bool soft_label, GetAttr<bool>(op.attrs, "soft_label", op.type));
  if (soft_label) {
    return absl::UnimplementedError(absl::StrCat(
        "op '", op.type, "': soft_label=true is not supported; pass int64 class labels"));
  }
  ASSIGN_OR_RETURN(ignore_index, GetAttr<int64_t>(op.attrs, "ignore_index", op.type));
  return absl::OkStatus();
}

absl::StatusOr<ClassBatch> GetClassBatch(const KernelContext& ctx, absl::string_view scores_arg) {
  ClassBatch b;
  ASSIGN_OR_RETURN(b.scores, ctx.InputTensor(scores_arg));
  ASSIGN_OR_RETURN(b.label, ctx.InputTensor("Label"));
  ASSIGN_OR_RETURN(b.rows,
                   ClassRowsShape(ctx.op().type, scores_arg, MetaOf(*b.scores), MetaOf(*b.label)));
  return b;
}

absl::Status BadLabelError(const KernelContext& ctx, int64_t label, int64_t position,
                           int64_t classes, std::optional<int64_t> ignore_index) {
  return BadLabelError(ctx.op().type, label, position, classes, ignore_index);
}

absl::Status BadLabelError(absl::string_view op, int64_t label, int64_t position, int64_t classes,
                           std::optional<int64_t> ignore_index) {
  return absl::InvalidArgumentError(absl::StrCat(
      "op '", op, "': label ", label, " at position ", position, " is out of range [0, ", classes,
      ")", ignore_index.has_value() ? absl::StrCat(" (ignore_index ", *ignore_index, ")") : ""));
}

absl::StatusOr<CrossEntropyOutputs> AllocateCrossEntropyOutputs(KernelContext* ctx,
                                                                const ClassBatch& b) {
  const DataType dtype = b.scores->dtype();
  CrossEntropyOutputs o;
  ASSIGN_OR_RETURN(o.softmax, ctx->AllocateOutput("Softmax", dtype, b.scores->shape()));
  ASSIGN_OR_RETURN(o.loss, ctx->AllocateOutput("Loss", dtype, b.rows.per_row));
  return o;
}

absl::StatusOr<CrossEntropyGradArgs> GetCrossEntropyGradArgs(KernelContext* ctx,
                                                             const ClassBatch& b) {
  CrossEntropyGradArgs a;
  ASSIGN_OR_RETURN(a.dloss, ctx->InputTensor("Loss@GRAD"));
  const DataType dtype = b.scores->dtype();
  RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, "Loss@GRAD", a.dloss->dtype(), a.dloss->shape(),
                               dtype, b.rows.per_row));
  ASSIGN_OR_RETURN(a.dlogits, ctx->AllocateOutput("Logits@GRAD", dtype, b.scores->shape()));
  return a;
}

absl::Status AccuracyAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(k, GetAttr<int64_t>(op.attrs, "k", op.type));
  if (k < 1) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op.type, "': k must be >= 1, got ", k));
  }
  return absl::OkStatus();
}

absl::StatusOr<AccuracyOutputs> AllocateAccuracyOutputs(KernelContext* ctx) {
  AccuracyOutputs o;
  ASSIGN_OR_RETURN(o.accuracy, ctx->AllocateOutput("Accuracy", DataType::kFloat32, Shape({1})));
  ASSIGN_OR_RETURN(o.correct, ctx->AllocateOutput("Correct", DataType::kInt64, Shape({1})));
  ASSIGN_OR_RETURN(o.total, ctx->AllocateOutput("Total", DataType::kInt64, Shape({1})));
  return o;
}

}  // namespace prologue
}  // namespace tandem
