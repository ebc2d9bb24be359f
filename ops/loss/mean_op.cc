// mean: Out = [the mean of all elements of X], and its gradient op.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/loss/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("mean")
    .Doc("Out (shape [1]) = the mean of all elements of X; X must not be empty.")
    .Input("X")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(TensorMeta out, MeanMeta(ctx->op().type, x));
      ctx->SetOutput("Out", out);
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "mean_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("mean_grad")
    .Doc("X@GRAD = Out@GRAD[0] / numel(X) everywhere.")
    .Input("X")
    .Input("Out@GRAD")
    .Output("X@GRAD")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(TensorMeta out, MeanMeta(ctx->op().type, x));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, out.dtype, out.shape));
      ctx->SetOutput("X@GRAD", x);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
