// elementwise_add with broadcasting, and its gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

absl::Status CheckSameDtype(InferShapeContext* ctx, const TensorMeta& x,
                            const TensorMeta& y) {
  if (x.dtype != y.dtype) {
    return ctx->Error(absl::StrCat("X is ", DataTypeName(x.dtype), " but Y is ",
                                   DataTypeName(y.dtype), "; cast one of them"));
  }
  if (x.dtype == DataType::kBool) return ctx->Error("X and Y must be numeric, got bool");
  return absl::OkStatus();
}

REGISTER_OP("elementwise_add")
    .Doc("Out = X + Y with numpy broadcasting; axis >= 0 aligns Y's dims with "
         "X's dims starting at axis.")
    .Input("X")
    .Input("Y")
    .Output("Out")
    .Attr<int64_t>("axis", -1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
      RETURN_IF_ERROR(CheckSameDtype(ctx, x, y));
      ASSIGN_OR_RETURN(int64_t axis, ctx->Attr<int64_t>("axis"));
      ASSIGN_OR_RETURN(Shape out, BroadcastShapes(ctx->op().type, x.shape, y.shape, axis));
      ctx->SetOutput("Out", TensorMeta{x.dtype, out});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd, const GradContext& ctx)
                      -> absl::StatusOr<std::vector<OpDesc>> {
      OpDesc g;
      g.type = "elementwise_add_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Y"] = {fwd.Input("Y")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      if (ctx.Wants(fwd.Input("X"))) g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      if (ctx.Wants(fwd.Input("Y"))) g.outputs["Y@GRAD"] = {GradVarName(fwd.Input("Y"))};
      if (g.outputs.empty()) return std::vector<OpDesc>{};
      g.attrs["axis"] = fwd.attrs.at("axis");
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("elementwise_add_grad")
    .Doc("X@GRAD / Y@GRAD: Out@GRAD summed over the dims X / Y were broadcast on.")
    .Input("X")
    .Input("Y")
    .Input("Out@GRAD")
    .OptionalOutput("X@GRAD")
    .OptionalOutput("Y@GRAD")
    .Attr<int64_t>("axis", -1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(CheckSameDtype(ctx, x, y));
      ASSIGN_OR_RETURN(int64_t axis, ctx->Attr<int64_t>("axis"));
      ASSIGN_OR_RETURN(Shape out, BroadcastShapes(ctx->op().type, x.shape, y.shape, axis));
      if (out != dout.shape || dout.dtype != x.dtype) {
        return ctx->Error(absl::StrCat("Out@GRAD is ", DataTypeName(dout.dtype),
                                       dout.shape.ToString(), ", expected ",
                                       DataTypeName(x.dtype), out.ToString()));
      }
      ctx->SetOutput("X@GRAD", x);
      ctx->SetOutput("Y@GRAD", y);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
