// momentum: heavy-ball or Nesterov momentum, in place, for a dense or a
// sparse (SelectedRows) gradient.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("momentum")
    .Doc(
        "VelocityOut = mu * Velocity + Grad; ParamOut = Param - LearningRate * "
        "VelocityOut, or with use_nesterov Param - LearningRate * (Grad + mu * "
        "VelocityOut). ParamOut and VelocityOut are Param's and Velocity's "
        "variables, updated in place. A SelectedRows Grad is lazy: duplicate "
        "rows are summed first, then only the rows present are updated (the "
        "velocity of the other rows does not decay). LearningRate is float32 "
        "with one element.")
    .Input("Param")
    .Input("Grad",
           "Param's dtype and shape, dense or SelectedRows; or, for a float32 Param, dense "
           "bfloat16 or float16 (a mixed-precision gradient, widened exactly in the kernel)")
    .Input("Velocity")
    .Input("LearningRate")
    .OptionalInput("SkipUpdate",
                   "bool with one element in host memory: when true the op leaves Param and "
                   "its state as they are (a step that dynamic loss scaling skips)")
    .OptionalInput("GradScale",
                   "Param's dtype with one element on the op's place: Grad is multiplied by it "
                   "(in Param's dtype) before the update (gradient clipping's factor)")
    .Output("ParamOut")
    .Output("VelocityOut")
    .Attr<double>("mu", 0.9, "momentum factor, >= 0")
    .Attr<bool>("use_nesterov", false)
    .SetInferShape([](InferShapeContext *ctx) -> absl::Status {
      RETURN_IF_ERROR(GetMomentumAttrs(ctx->op()).status());
      ASSIGN_OR_RETURN(TensorMeta param, ctx->Input("Param"));
      ASSIGN_OR_RETURN(TensorMeta grad, ctx->Input("Grad"));
      ASSIGN_OR_RETURN(TensorMeta velocity, ctx->Input("Velocity"));
      ASSIGN_OR_RETURN(TensorMeta lr, ctx->Input("LearningRate"));
      RETURN_IF_ERROR(CheckMomentumArgs(ctx->op(), param, grad, velocity, lr));
      RETURN_IF_ERROR(CheckOptionalUpdateArgs(ctx, param.dtype));
      ctx->SetOutput("ParamOut", TensorMeta{param.dtype, param.shape});
      ctx->SetOutput("VelocityOut", TensorMeta{param.dtype, param.shape});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
