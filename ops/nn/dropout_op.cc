// dropout (upscale_in_train, seeded), and its gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace {

// X's meta after validating its dtype and attr dropout_prob.
absl::StatusOr<TensorMeta> InferX(InferShapeContext* ctx, absl::string_view arg) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input(arg));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, arg, x.dtype));
  ASSIGN_OR_RETURN(double p, ctx->Attr<double>("dropout_prob"));
  RETURN_IF_ERROR(CheckDropoutProb(ctx->op().type, p));
  return x;
}

REGISTER_OP("dropout")
    .Doc(
        "Training (is_test false): Mask[i] = CounterUniform(CounterStreamSeed(seed, "
        "step), i) >= dropout_prob (backends/common/counter_random.h; i the flat "
        "index, step the number of earlier runs of this op instance's kernel, so "
        "every backend draws the same bits) and Out[i] = Mask[i] ? X[i] * s : 0, a "
        "product in X's dtype with s = 1 / (1 - dropout_prob) rounded to it (s = 0 "
        "when dropout_prob is 1). Inference (is_test true): Out = X and Mask is "
        "all true. Mask is bool with X's shape. float32, float64.")
    .Input("X")
    .Output("Out")
    .Output("Mask", "bool, X's shape: the elements kept")
    .Attr<double>("dropout_prob", 0.5, "probability of dropping an element, in [0, 1]")
    .Attr<bool>("is_test", false, "inference: Out = X")
    .Attr<int64_t>("seed", 0, "the generator's seed (an int64 taken as its uint64 bits)")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, InferX(ctx, "X"));
      ctx->SetOutput("Out", x);
      ctx->SetOutput("Mask", TensorMeta{DataType::kBool, x.shape});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "dropout_grad";
      g.inputs["Mask"] = {fwd.Output("Mask")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      g.attrs["dropout_prob"] = fwd.attrs.at("dropout_prob");
      g.attrs["is_test"] = fwd.attrs.at("is_test");
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("dropout_grad")
    .Doc(
        "X@GRAD[i] = Mask[i] ? Out@GRAD[i] * s : 0 with the forward's s (1 when "
        "is_test).")
    .Input("Mask")
    .Input("Out@GRAD")
    .Output("X@GRAD")
    .Attr<double>("dropout_prob", 0.5)
    .Attr<bool>("is_test", false)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta dout, InferX(ctx, "Out@GRAD"));
      ASSIGN_OR_RETURN(TensorMeta mask, ctx->Input("Mask"));
      RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, "Mask", mask.dtype, mask.shape, DataType::kBool,
                                   dout.shape));
      ctx->SetOutput("X@GRAD", dout);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
