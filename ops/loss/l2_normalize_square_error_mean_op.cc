// l2_normalize_square_error_mean: the mean over all elements of
// (X / sqrt(sum(X^2 over axis) + epsilon) - Label)^2, one op for
// l2_normalize -> square_error_cost -> mean (the fusion pass,
// framework/fusion/fuse_patterns.h, makes it), and its gradient op.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/loss/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// X's meta after checking X, Label and attr axis.
absl::StatusOr<TensorMeta> InferX(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  ASSIGN_OR_RETURN(TensorMeta label, ctx->Input("Label"));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, "X", x.dtype));
  RETURN_IF_ERROR(
      CheckArgMeta(ctx->op().type, "Label", label.dtype, label.shape, x.dtype, x.shape));
  ASSIGN_OR_RETURN(int64_t axis, ctx->Attr<int64_t>("axis"));
  RETURN_IF_ERROR(NormalizeAxis(ctx->op().type, "X", x.shape, axis).status());
  return x;
}

REGISTER_OP("l2_normalize_square_error_mean")
    .Doc(
        "Out (shape [1]) = the mean over all elements of (Y - Label)^2, Y = X / sqrt(sum(X^2 "
        "over axis) + epsilon); X and Label have the same dtype and shape, X is not empty. "
        "Equals l2_normalize, square_error_cost and mean in turn, with sums in double.")
    .Input("X")
    .Input("Label")
    .Output("Out")
    .Attr<int64_t>("axis", -1, "the normalised dim; negative counts from the end")
    .Attr<double>("epsilon", 1e-10)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, InferX(ctx));
      ASSIGN_OR_RETURN(TensorMeta out, MeanMeta(ctx->op().type, x));
      ctx->SetOutput("Out", out);
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      OpDesc g;
      g.type = "l2_normalize_square_error_mean_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Label"] = {fwd.Input("Label")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      if (ctx.Wants(fwd.Input("X"))) g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      if (ctx.Wants(fwd.Input("Label"))) {
        g.outputs["Label@GRAD"] = {GradVarName(fwd.Input("Label"))};
      }
      if (g.outputs.empty()) return std::vector<OpDesc>{};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("l2_normalize_square_error_mean_grad")
    .Doc(
        "With Y = X / n, n = sqrt(sum(X^2 over axis) + epsilon), N the elements and D = 2 (Y - "
        "Label) Out@GRAD / N: X@GRAD = (D - Y * sum(D * Y over axis)) / n, Label@GRAD = -D.")
    .Input("X")
    .Input("Label")
    .Input("Out@GRAD")
    .OptionalOutput("X@GRAD")
    .OptionalOutput("Label@GRAD")
    .Attr<int64_t>("axis", -1)
    .Attr<double>("epsilon", 1e-10)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, InferX(ctx));
      ASSIGN_OR_RETURN(TensorMeta out, MeanMeta(ctx->op().type, x));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, out.dtype, out.shape));
      ctx->SetOutput("X@GRAD", x);
      ctx->SetOutput("Label@GRAD", x);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
