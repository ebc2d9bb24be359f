// reshape: Out = X with new dims, sharing X's buffer, and its gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/array/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("reshape")
    .Doc(
        "Out = X with dims attr shape (row-major order unchanged): a 0 copies X's "
        "dim at that index, one -1 is inferred from the element count, which must "
        "not change. Out shares X's buffer (no copy). float32, float64, int32, "
        "int64.")
    .Input("X")
    .Output("Out")
    .RequiredAttr("shape", AttrType::kInts, "target dims; 0 copies X's dim, one -1 is inferred")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx->Attr<std::vector<int64_t>>("shape"));
      ASSIGN_OR_RETURN(Shape out, ReshapeShape(ctx->op().type, x.shape, shape));
      ctx->SetOutput("Out", TensorMeta{x.dtype, out});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "reshape_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("reshape_grad")
    .Doc(
        "X@GRAD = Out@GRAD with X's dims, sharing Out@GRAD's buffer. X is read for "
        "its shape only; Out@GRAD must have X's dtype and element count.")
    .Input("X")
    .Input("Out@GRAD")
    .Output("X@GRAD")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      // Element counts are checked once both are known (no unknown dims).
      const absl::StatusOr<int64_t> n = x.shape.NumElements();
      const absl::StatusOr<int64_t> n_dout = dout.shape.NumElements();
      if (dout.dtype != x.dtype || (n.ok() && n_dout.ok() && *n != *n_dout)) {
        return ctx->Error(absl::StrCat(
            "Out@GRAD ", DataTypeName(dout.dtype), dout.shape.ToString(), " does not match X ",
            DataTypeName(x.dtype), x.shape.ToString(), " (same dtype and element count needed)"));
      }
      ctx->SetOutput("X@GRAD", x);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
