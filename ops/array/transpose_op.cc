// transpose: Out = X with its dims permuted, and its gradient op.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/array/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("transpose")
    .Doc(
        "Out = X with dims permuted: Out.dim(k) = X.dim(axis[k]) and "
        "Out[i_0, ..., i_{r-1}] = X[j] with j[axis[k]] = i_k. axis holds each of "
        "0..rank(X)-1 once. float32, float64, int32, int64.")
    .Input("X")
    .Output("Out")
    .RequiredAttr("axis", AttrType::kInts, "the permutation")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(std::vector<int64_t> axis, ctx->Attr<std::vector<int64_t>>("axis"));
      ASSIGN_OR_RETURN(Shape out, TransposeShape(ctx->op().type, x.shape, axis));
      ctx->SetOutput("Out", TensorMeta{x.dtype, out});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "transpose_grad";
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      g.attrs["axis"] = fwd.attrs.at("axis");
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("transpose_grad")
    .Doc("X@GRAD = Out@GRAD transposed by the inverse of the forward's axis.")
    .Input("Out@GRAD")
    .Output("X@GRAD")
    .RequiredAttr("axis", AttrType::kInts, "the forward op's permutation")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      ASSIGN_OR_RETURN(std::vector<int64_t> axis, ctx->Attr<std::vector<int64_t>>("axis"));
      RETURN_IF_ERROR(TransposeShape(ctx->op().type, dout.shape, axis).status());
      ASSIGN_OR_RETURN(Shape dx,
                       TransposeShape(ctx->op().type, dout.shape, InversePermutation(axis)));
      ctx->SetOutput("X@GRAD", TensorMeta{dout.dtype, dx});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
