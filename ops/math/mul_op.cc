// mul (Paddle's): the product of X and Y each flattened to a matrix, and
// its gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// X's meta and the product geometry, validated.
absl::StatusOr<FlatMatmulDims> InferMul(InferShapeContext* ctx, TensorMeta* x) {
  ASSIGN_OR_RETURN(*x, ctx->Input("X"));
  ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, "X", x->dtype));
  RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, "Y", y.dtype, y.shape, x->dtype, y.shape));
  ASSIGN_OR_RETURN(int64_t xn, ctx->Attr<int64_t>("x_num_col_dims"));
  ASSIGN_OR_RETURN(int64_t yn, ctx->Attr<int64_t>("y_num_col_dims"));
  return FlatMatmulShape(ctx->op().type, {"X", x->shape, xn, "x_num_col_dims"},
                         {"Y", y.shape, yn, "y_num_col_dims"});
}

REGISTER_OP("mul")
    .Doc(
        "Out = X * Y as matrices: X's first x_num_col_dims dims form the rows of X and the "
        "rest its columns, Y likewise with y_num_col_dims; Out's shape is "
        "X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:]. float32 and float64.")
    .Input("X")
    .Input("Y")
    .Output("Out")
    .Attr<int64_t>("x_num_col_dims", 1)
    .Attr<int64_t>("y_num_col_dims", 1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(FlatMatmulDims d, InferMul(ctx, &x));
      ctx->SetOutput("Out", TensorMeta{x.dtype, d.out});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      OpDesc g;
      g.type = "mul_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Y"] = {fwd.Input("Y")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      if (ctx.Wants(fwd.Input("X"))) g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      if (ctx.Wants(fwd.Input("Y"))) g.outputs["Y@GRAD"] = {GradVarName(fwd.Input("Y"))};
      if (g.outputs.empty()) return std::vector<OpDesc>{};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("mul_grad")
    .Doc("X@GRAD = Out@GRAD * Y^T and Y@GRAD = X^T * Out@GRAD as matrices, shaped like X / Y.")
    .Input("X")
    .Input("Y")
    .Input("Out@GRAD")
    .OptionalOutput("X@GRAD")
    .OptionalOutput("Y@GRAD")
    .Attr<int64_t>("x_num_col_dims", 1)
    .Attr<int64_t>("y_num_col_dims", 1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(FlatMatmulDims d, InferMul(ctx, &x));
      ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, x.dtype, d.out));
      ctx->SetOutput("X@GRAD", x);
      ctx->SetOutput("Y@GRAD", y);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
