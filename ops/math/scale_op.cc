// scale: Out = scale * X + bias (bias_after_scale) or scale * (X + bias).
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

REGISTER_OP("scale")
    .Doc("Out = scale * X + bias, or scale * (X + bias) if !bias_after_scale.")
    .Input("X")
    .Output("Out")
    .Attr<double>("scale", 1.0)
    .Attr<double>("bias", 0.0)
    .Attr<bool>("bias_after_scale", true)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      if (x.dtype == DataType::kBool) return ctx->Error("X must be numeric, got bool");
      ctx->SetOutput("Out", x);
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd, const GradContext& ctx)
                      -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "scale";
      g.inputs["X"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["Out"] = {GradVarName(fwd.Input("X"))};
      g.attrs["scale"] = fwd.attrs.at("scale");
      g.attrs["bias"] = 0.0;
      g.attrs["bias_after_scale"] = true;
      return std::vector<OpDesc>{g};
    });

}  // namespace
}  // namespace tandem
