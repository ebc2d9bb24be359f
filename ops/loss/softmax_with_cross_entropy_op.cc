// softmax_with_cross_entropy: softmax over the last dim of Logits and the
// cross-entropy loss of int64 class labels, fused for numerical stability;
// and its gradient op.
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/loss/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// Unimplemented for soft labels (the attribute exists for Paddle programs).
absl::Status CheckHardLabels(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(bool soft_label, ctx->Attr<bool>("soft_label"));
  if (!soft_label) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      "op '", ctx->op().type, "': soft_label=true is not supported; pass int64 class labels"));
}

REGISTER_OP("softmax_with_cross_entropy")
    .Doc(
        "Softmax = softmax of Logits [..., C] over the last dim; Loss [..., 1] = "
        "-log(Softmax[label]) computed as log(sum(exp(Logits - max))) + max - Logits[label]. "
        "Label is int64 [..., 1] or [...]; a row whose label is ignore_index gets loss 0 (and "
        "zero gradient); any other label outside [0, C) is InvalidArgument naming the label, "
        "its position and C. float32 and float64; soft_label=true is Unimplemented.")
    .Input("Logits")
    .Input("Label")
    .Output("Softmax")
    .Output("Loss")
    .Attr<bool>("soft_label", false, "only false (int64 class labels) is supported")
    .Attr<int64_t>("ignore_index", -100, "the label of rows that contribute nothing")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      RETURN_IF_ERROR(CheckHardLabels(ctx));
      ASSIGN_OR_RETURN(TensorMeta logits, ctx->Input("Logits"));
      ASSIGN_OR_RETURN(TensorMeta label, ctx->Input("Label"));
      ASSIGN_OR_RETURN(ClassRows r, ClassRowsShape(ctx->op().type, "Logits", logits, label));
      ctx->SetOutput("Softmax", logits);
      ctx->SetOutput("Loss", TensorMeta{logits.dtype, r.per_row});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("Logits"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "softmax_with_cross_entropy_grad";
      g.inputs["Softmax"] = {fwd.Output("Softmax")};
      g.inputs["Label"] = {fwd.Input("Label")};
      g.inputs["Loss@GRAD"] = {GradVarName(fwd.Output("Loss"))};
      g.outputs["Logits@GRAD"] = {GradVarName(fwd.Input("Logits"))};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("softmax_with_cross_entropy_grad")
    .Doc(
        "Logits@GRAD = (Softmax - onehot(Label)) * Loss@GRAD per row; zero for rows whose "
        "label is ignore_index. Labels are checked as in the forward op.")
    .Input("Softmax")
    .Input("Label")
    .Input("Loss@GRAD")
    .Output("Logits@GRAD")
    .Attr<bool>("soft_label", false)
    .Attr<int64_t>("ignore_index", -100)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      RETURN_IF_ERROR(CheckHardLabels(ctx));
      ASSIGN_OR_RETURN(TensorMeta softmax, ctx->Input("Softmax"));
      ASSIGN_OR_RETURN(TensorMeta label, ctx->Input("Label"));
      ASSIGN_OR_RETURN(ClassRows r, ClassRowsShape(ctx->op().type, "Softmax", softmax, label));
      ASSIGN_OR_RETURN(TensorMeta dloss, ctx->Input("Loss@GRAD"));
      RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, "Loss@GRAD", dloss.dtype, dloss.shape,
                                   softmax.dtype, r.per_row));
      ctx->SetOutput("Logits@GRAD", softmax);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
