// cast: Out = X converted to out_dtype (bool: nonzero -> true).
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

REGISTER_OP("cast")
    .Doc("Out = X converted to out_dtype; to bool maps nonzero to true.")
    .Input("X")
    .Output("Out")
    .RequiredAttr("out_dtype", AttrType::kDataType)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(DataType out, ctx->Attr<DataType>("out_dtype"));
      ctx->SetOutput("Out", TensorMeta{out, x.shape});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd, const GradContext& ctx)
                      -> absl::StatusOr<std::vector<OpDesc>> {
      const std::string x = fwd.Input("X");
      if (!ctx.Wants(x)) return std::vector<OpDesc>{};
      std::optional<TensorMeta> meta = ctx.meta(x);
      if (!meta.has_value()) {
        return absl::FailedPreconditionError(
            "op 'cast': gradient needs the dtype of input '" + x + "'");
      }
      OpDesc g;
      g.type = "cast";
      g.inputs["X"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["Out"] = {GradVarName(x)};
      g.attrs["out_dtype"] = meta->dtype;
      return std::vector<OpDesc>{g};
    });

}  // namespace
}  // namespace tandem
