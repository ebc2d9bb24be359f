// square_error_cost: Out = (X - Y)^2 element-wise, and its gradient op.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/loss/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

absl::StatusOr<TensorMeta> InferOut(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
  return SquareErrorCostMeta(ctx->op().type, x, y);
}

REGISTER_OP("square_error_cost")
    .Doc("Out = (X - Y)^2 element-wise; X and Y have the same dtype and shape.")
    .Input("X")
    .Input("Y")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta out, InferOut(ctx));
      ctx->SetOutput("Out", out);
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      OpDesc g;
      g.type = "square_error_cost_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Y"] = {fwd.Input("Y")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      if (ctx.Wants(fwd.Input("X"))) g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      if (ctx.Wants(fwd.Input("Y"))) g.outputs["Y@GRAD"] = {GradVarName(fwd.Input("Y"))};
      if (g.outputs.empty()) return std::vector<OpDesc>{};
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("square_error_cost_grad")
    .Doc("X@GRAD = 2 (X - Y) Out@GRAD, Y@GRAD = -2 (X - Y) Out@GRAD.")
    .Input("X")
    .Input("Y")
    .Input("Out@GRAD")
    .OptionalOutput("X@GRAD")
    .OptionalOutput("Y@GRAD")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta out, InferOut(ctx));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, out.dtype, out.shape));
      ctx->SetOutput("X@GRAD", out);
      ctx->SetOutput("Y@GRAD", out);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
