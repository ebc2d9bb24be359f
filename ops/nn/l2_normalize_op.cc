// l2_normalize: Out = X / sqrt(sum(X^2 over axis) + epsilon), and its
// gradient op.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// X's meta after validating its dtype and attr axis.
absl::StatusOr<TensorMeta> InferX(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, "X", x.dtype));
  ASSIGN_OR_RETURN(int64_t axis, ctx->Attr<int64_t>("axis"));
  RETURN_IF_ERROR(NormalizeAxis(ctx->op().type, "X", x.shape, axis).status());
  return x;
}

REGISTER_OP("l2_normalize")
    .Doc("Out = X / sqrt(sum(X^2 over axis) + epsilon); same shape as X.")
    .Input("X")
    .Output("Out")
    .Attr<int64_t>("axis", -1, "the reduced dim; negative counts from the end")
    .Attr<double>("epsilon", 1e-10)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, InferX(ctx));
      ctx->SetOutput("Out", x);
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "l2_normalize_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Out"] = {fwd.Output("Out")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("l2_normalize_grad")
    .Doc(
        "X@GRAD = (Out@GRAD - Out * sum(Out@GRAD * Out over axis)) / "
        "sqrt(sum(X^2 over axis) + epsilon).")
    .Input("X")
    .Input("Out")
    .Input("Out@GRAD")
    .Output("X@GRAD")
    .Attr<int64_t>("axis", -1)
    .Attr<double>("epsilon", 1e-10)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, InferX(ctx));
      for (const char* arg : {"Out", "Out@GRAD"}) {
        ASSIGN_OR_RETURN(TensorMeta m, ctx->Input(arg));
        RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, arg, m.dtype, m.shape, x.dtype, x.shape));
      }
      ctx->SetOutput("X@GRAD", x);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
