// adam: Adam with bias correction and optional (decoupled or L2) weight
// decay, in place, for a dense or a sparse (SelectedRows) gradient.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("adam")
    .Doc(
        "One Adam step at t = the step number, where Beta1Pow = beta1^t and "
        "Beta2Pow = beta2^t (so they start at beta1 and beta2). With g = Grad "
        "(+ weight_decay * Param if weight decay is not decoupled): "
        "Moment1Out = beta1 * Moment1 + (1 - beta1) * g; Moment2Out = beta2 * "
        "Moment2 + (1 - beta2) * g^2; ParamOut = Param * (1 - lr * "
        "weight_decay if decoupled, else 1) - lr * (Moment1Out / (1 - "
        "Beta1Pow)) / (sqrt(Moment2Out / (1 - Beta2Pow)) + epsilon); "
        "Beta1PowOut = Beta1Pow * beta1, Beta2PowOut = Beta2Pow * beta2. Every "
        "output is its input's variable, updated in place. A SelectedRows Grad "
        "is lazy: duplicate rows are summed first, then only the rows present "
        "are updated (moments of the other rows do not decay, decoupled weight "
        "decay skips them too); the beta powers advance once per step either "
        "way. LearningRate is float32 with one element; Beta1Pow and Beta2Pow "
        "have Param's dtype and one element, in [0, 1).")
    .Input("Param")
    .Input("Grad",
           "Param's dtype and shape, dense or SelectedRows; or, for a float32 Param, dense "
           "bfloat16 or float16 (a mixed-precision gradient, widened exactly in the kernel)")
    .Input("LearningRate")
    .Input("Moment1")
    .Input("Moment2")
    .Input("Beta1Pow")
    .Input("Beta2Pow")
    .OptionalInput("SkipUpdate",
                   "bool with one element in host memory: when true the op leaves Param and "
                   "its state as they are (a step that dynamic loss scaling skips)")
    .OptionalInput("GradScale",
                   "Param's dtype with one element on the op's place: Grad is multiplied by it "
                   "(in Param's dtype) before the update (gradient clipping's factor)")
    .Output("ParamOut")
    .Output("Moment1Out")
    .Output("Moment2Out")
    .Output("Beta1PowOut")
    .Output("Beta2PowOut")
    .OptionalOutput("ParamCastOut",
                    "ParamOut cast to param_cast_dtype (round to nearest even), written with the "
                    "update: the 16-bit working copy of a float32 parameter that mixed precision's "
                    "forward reads (Optimizer's working copies); a dense Grad only")
    .Attr<DataType>("param_cast_dtype", DataType::kBFloat16,
                    "ParamCastOut's dtype: bfloat16 or float16")
    .Attr<double>("beta1", 0.9, "in [0, 1)")
    .Attr<double>("beta2", 0.999, "in [0, 1)")
    .Attr<double>("epsilon", 1e-8, ">= 0")
    .Attr<double>("weight_decay", 0.0, ">= 0")
    .Attr<bool>("decoupled_weight_decay", true,
                "true: AdamW (Param shrinks by lr * weight_decay * Param); false: L2 "
                "(weight_decay * Param added to the gradient)")
    .SetInferShape([](InferShapeContext *ctx) -> absl::Status {
      RETURN_IF_ERROR(GetAdamAttrs(ctx->op()).status());
      AdamMetas m;
      ASSIGN_OR_RETURN(m.param, ctx->Input("Param"));
      ASSIGN_OR_RETURN(m.grad, ctx->Input("Grad"));
      ASSIGN_OR_RETURN(m.learning_rate, ctx->Input("LearningRate"));
      ASSIGN_OR_RETURN(m.moment1, ctx->Input("Moment1"));
      ASSIGN_OR_RETURN(m.moment2, ctx->Input("Moment2"));
      ASSIGN_OR_RETURN(m.beta1_pow, ctx->Input("Beta1Pow"));
      ASSIGN_OR_RETURN(m.beta2_pow, ctx->Input("Beta2Pow"));
      RETURN_IF_ERROR(CheckAdamArgs(ctx->op(), m));
      const TensorMeta dense{m.param.dtype, m.param.shape};
      RETURN_IF_ERROR(CheckOptionalUpdateArgs(ctx, m.param.dtype));
      ctx->SetOutput("ParamOut", dense);
      ctx->SetOutput("Moment1Out", dense);
      ctx->SetOutput("Moment2Out", dense);
      ctx->SetOutput("Beta1PowOut", TensorMeta{m.beta1_pow.dtype, m.beta1_pow.shape});
      ctx->SetOutput("Beta2PowOut", TensorMeta{m.beta2_pow.dtype, m.beta2_pow.shape});
      if (ctx->op().outputs.count("ParamCastOut") == 0) return absl::OkStatus();
      ASSIGN_OR_RETURN(DataType cast, ctx->Attr<DataType>("param_cast_dtype"));
      RETURN_IF_ERROR(CheckParamCast(ctx->op(), m.param.dtype, m.grad.selected_rows, cast));
      ctx->SetOutput("ParamCastOut", TensorMeta{cast, m.param.shape});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
