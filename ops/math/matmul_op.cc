// matmul: Out = alpha * op(X) * op(Y), batched, and its gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

absl::StatusOr<MatmulDims> InferMatmul(InferShapeContext* ctx, TensorMeta* x_out) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
  if (x.dtype != y.dtype) {
    return ctx->Error(absl::StrCat("X is ", DataTypeName(x.dtype), " but Y is ",
                                   DataTypeName(y.dtype)));
  }
  if (!IsFloating(x.dtype)) {
    return ctx->Error(absl::StrCat("X and Y must be float32 or float64, got ",
                                   DataTypeName(x.dtype)));
  }
  ASSIGN_OR_RETURN(bool tx, ctx->Attr<bool>("transpose_X"));
  ASSIGN_OR_RETURN(bool ty, ctx->Attr<bool>("transpose_Y"));
  *x_out = x;
  return MatmulShape(ctx->op().type, x.shape, y.shape, tx, ty);
}

REGISTER_OP("matmul")
    .Doc("Out = alpha * op(X) * op(Y); op transposes the last two dims when "
         "transpose_X / transpose_Y. Batch dims must match or be absent on one side.")
    .Input("X")
    .Input("Y")
    .Output("Out")
    .Attr<bool>("transpose_X", false)
    .Attr<bool>("transpose_Y", false)
    .Attr<double>("alpha", 1.0)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(MatmulDims d, InferMatmul(ctx, &x));
      ctx->SetOutput("Out", TensorMeta{x.dtype, d.out});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd, const GradContext& ctx)
                      -> absl::StatusOr<std::vector<OpDesc>> {
      OpDesc g;
      g.type = "matmul_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Y"] = {fwd.Input("Y")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      if (ctx.Wants(fwd.Input("X"))) g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      if (ctx.Wants(fwd.Input("Y"))) g.outputs["Y@GRAD"] = {GradVarName(fwd.Input("Y"))};
      if (g.outputs.empty()) return std::vector<OpDesc>{};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("matmul_grad")
    .Doc("Gradients of matmul: X@GRAD and Y@GRAD from Out@GRAD.")
    .Input("X")
    .Input("Y")
    .Input("Out@GRAD")
    .OptionalOutput("X@GRAD")
    .OptionalOutput("Y@GRAD")
    .Attr<bool>("transpose_X", false)
    .Attr<bool>("transpose_Y", false)
    .Attr<double>("alpha", 1.0)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(MatmulDims d, InferMatmul(ctx, &x));
      ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      if (dout.shape != d.out || dout.dtype != x.dtype) {
        return ctx->Error(absl::StrCat("Out@GRAD is ", DataTypeName(dout.dtype),
                                       dout.shape.ToString(), ", expected ",
                                       DataTypeName(x.dtype), d.out.ToString()));
      }
      ctx->SetOutput("X@GRAD", x);
      ctx->SetOutput("Y@GRAD", y);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
