// sgd: ParamOut = Param - LearningRate * Grad, in place, for a dense or a
// sparse (SelectedRows) gradient.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("sgd")
    .Doc(
        "ParamOut = Param - LearningRate * Grad. ParamOut is Param's variable, "
        "updated in place. A SelectedRows Grad updates only its rows: "
        "Param[rows[i]] -= lr * value[i], duplicates accumulating. LearningRate "
        "is float32 with one element.")
    .Input("Param")
    .Input("Grad",
           "Param's dtype and shape, dense or SelectedRows; or, for a float32 Param, dense "
           "bfloat16 or float16 (a mixed-precision gradient, widened exactly in the kernel)")
    .Input("LearningRate")
    .OptionalInput("SkipUpdate",
                   "bool with one element in host memory: when true the op leaves Param and "
                   "its state as they are (a step that dynamic loss scaling skips)")
    .OptionalInput("GradScale",
                   "Param's dtype with one element on the op's place: Grad is multiplied by it "
                   "(in Param's dtype) before the update (gradient clipping's factor)")
    .Output("ParamOut")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta param, ctx->Input("Param"));
      ASSIGN_OR_RETURN(TensorMeta grad, ctx->Input("Grad"));
      ASSIGN_OR_RETURN(TensorMeta lr, ctx->Input("LearningRate"));
      RETURN_IF_ERROR(CheckSgdArgs(ctx->op(), param, grad, lr));
      RETURN_IF_ERROR(CheckOptionalUpdateArgs(ctx, param.dtype));
      ctx->SetOutput("ParamOut", TensorMeta{param.dtype, param.shape});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
