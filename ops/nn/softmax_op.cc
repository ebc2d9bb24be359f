// softmax along an axis, and its gradient op.
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// The meta of `arg` after validating its dtype and attr axis against it.
absl::StatusOr<TensorMeta> InferAlongAxis(InferShapeContext* ctx, const char* arg) {
  ASSIGN_OR_RETURN(TensorMeta m, ctx->Input(arg));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, arg, m.dtype));
  ASSIGN_OR_RETURN(int64_t axis, ctx->Attr<int64_t>("axis"));
  RETURN_IF_ERROR(NormalizeAxis(ctx->op().type, arg, m.shape, axis).status());
  return m;
}

REGISTER_OP("softmax")
    .Doc(
        "Out = exp(X - max) / sum(exp(X - max)) along axis (the max over the axis is "
        "subtracted first, so exp never overflows); float32 and float64, Out has X's shape.")
    .Input("X")
    .Output("Out")
    .Attr<int64_t>("axis", -1, "the normalized dim; negative counts from the end")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, InferAlongAxis(ctx, "X"));
      ctx->SetOutput("Out", x);
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "softmax_grad";
      g.inputs["Out"] = {fwd.Output("Out")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("softmax_grad")
    .Doc("X@GRAD = Out * (Out@GRAD - sum(Out@GRAD * Out along axis)).")
    .Input("Out")
    .Input("Out@GRAD")
    .Output("X@GRAD")
    .Attr<int64_t>("axis", -1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta out, InferAlongAxis(ctx, "Out"));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, out.dtype, out.shape));
      ctx->SetOutput("X@GRAD", out);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
