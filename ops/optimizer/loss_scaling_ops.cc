// Dynamic loss scaling (float16 training): check_finite_and_unscale divides
// a gradient by the loss scale and tells whether any of its values is inf or
// NaN; update_loss_scaling shrinks the scale after such a step and grows it
// after a run of good ones, and says whether the step is skipped (the
// update ops' SkipUpdate). Optimizer::EnableDynamicLossScaling appends them.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("check_finite_and_unscale")
    .Doc(
        "Out = X / Scale (exact for a power-of-two scale); FoundInfinite = whether any value of X "
        "is inf or NaN. X is a float32 or float64 gradient, dense or SelectedRows (its values "
        "are divided; Out keeps its rows); Out may be X's variable. Scale is float32 with one "
        "element in host memory.")
    .Input("X")
    .Input("Scale")
    .Output("Out")
    .Output("FoundInfinite", "bool with one element, where X is")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(TensorMeta scale, ctx->Input("Scale"));
      if (x.dtype != DataType::kFloat32 && x.dtype != DataType::kFloat64) {
        return ctx->Error(absl::StrCat("X '", ctx->op().Input("X"),
                                       "' must be float32 or float64, got ",
                                       DataTypeName(x.dtype)));
      }
      RETURN_IF_ERROR(CheckScalarArg(ctx->op(), "Scale", scale, DataType::kFloat32));
      ctx->SetOutput("Out", x);
      ctx->SetOutput("FoundInfinite", TensorMeta{DataType::kBool, Shape({1})});
      return absl::OkStatus();
    });

REGISTER_OP("update_loss_scaling")
    .Doc(
        "After a step whose gradients' FoundInfinite flags (one or more, host memory) hold a "
        "true one: StepSkipped = true, LossScaling = PrevLossScaling * backoff_factor, "
        "OutGoodSteps = 0. Else StepSkipped = false and OutGoodSteps = InGoodSteps + 1; when "
        "that reaches growth_interval, LossScaling = PrevLossScaling * growth_factor (kept when "
        "the product is not finite) and OutGoodSteps = 0. LossScaling and OutGoodSteps are "
        "PrevLossScaling's and InGoodSteps' variables, updated in place; all in host memory.")
    .DuplicableInput("FoundInfinite")
    .Input("PrevLossScaling")
    .Input("InGoodSteps")
    .Output("LossScaling")
    .Output("OutGoodSteps")
    .Output("StepSkipped", "bool with one element in host memory")
    .Attr<double>("growth_factor", 2.0)
    .Attr<double>("backoff_factor", 0.5)
    .Attr<int64_t>("growth_interval", 2000)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      RETURN_IF_ERROR(GetLossScalingAttrs(ctx->op()).status());
      for (int i = 0; i < ctx->InputCount("FoundInfinite"); ++i) {
        ASSIGN_OR_RETURN(TensorMeta found, ctx->Input("FoundInfinite", i));
        RETURN_IF_ERROR(CheckScalarArg(ctx->op(), "FoundInfinite", found, DataType::kBool));
      }
      ASSIGN_OR_RETURN(TensorMeta scale, ctx->Input("PrevLossScaling"));
      ASSIGN_OR_RETURN(TensorMeta good, ctx->Input("InGoodSteps"));
      RETURN_IF_ERROR(CheckScalarArg(ctx->op(), "PrevLossScaling", scale, DataType::kFloat32));
      RETURN_IF_ERROR(CheckScalarArg(ctx->op(), "InGoodSteps", good, DataType::kInt32));
      ctx->SetOutput("LossScaling", scale);
      ctx->SetOutput("OutGoodSteps", good);
      ctx->SetOutput("StepSkipped", TensorMeta{DataType::kBool, Shape({1})});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
