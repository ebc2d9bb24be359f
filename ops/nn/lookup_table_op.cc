// lookup_table: Out[i...] = W[Ids[i...]] (embedding lookup), and its
// gradient op, which produces a dense or a sparse (SelectedRows) W@GRAD.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace {

// Out's meta after validating Ids, W and attr padding_idx.
absl::StatusOr<TensorMeta> InferLookup(InferShapeContext* ctx, TensorMeta* w_out) {
  ASSIGN_OR_RETURN(TensorMeta ids, ctx->Input("Ids"));
  ASSIGN_OR_RETURN(TensorMeta w, ctx->Input("W"));
  ASSIGN_OR_RETURN(Shape out, LookupTableShape(ctx->op().type, ids, w));
  ASSIGN_OR_RETURN(int64_t padding_idx, ctx->Attr<int64_t>("padding_idx"));
  if (w.shape.dim(0) >= 0) {
    RETURN_IF_ERROR(PaddingRow(ctx->op().type, padding_idx, w.shape.dim(0)).status());
  }
  *w_out = w;
  return TensorMeta{w.dtype, out};
}

REGISTER_OP("lookup_table")
    .Doc(
        "Out = W[Ids]: Ids (int64, any shape) select rows of the [rows, dim] "
        "table W; Out has shape Ids.shape + [dim]. Every id must be in "
        "[0, rows). Rows equal to padding_idx give zeros.")
    .Input("Ids")
    .Input("W")
    .Output("Out")
    .Attr<bool>("is_sparse", false, "W@GRAD is SelectedRows (the looked-up rows)")
    .Attr<int64_t>("padding_idx", -1,
                   "-1: none; other negatives count from the end (rows + padding_idx)")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta w;
      ASSIGN_OR_RETURN(TensorMeta out, InferLookup(ctx, &w));
      ctx->SetOutput("Out", out);
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("W"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "lookup_table_grad";
      g.inputs["Ids"] = {fwd.Input("Ids")};
      g.inputs["W"] = {fwd.Input("W")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["W@GRAD"] = {GradVarName(fwd.Input("W"))};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("lookup_table_grad")
    .Doc(
        "W@GRAD of lookup_table. Dense (is_sparse false): a zero [rows, dim] "
        "tensor with row Ids[i] += Out@GRAD[i]. Sparse: SelectedRows with rows = "
        "the ids in order (duplicates kept) and value = Out@GRAD as [n, dim]. "
        "Padding rows get zeros.")
    .Input("Ids")
    .Input("W")
    .Input("Out@GRAD")
    .Output("W@GRAD")
    .Attr<bool>("is_sparse", false)
    .Attr<int64_t>("padding_idx", -1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta w;
      ASSIGN_OR_RETURN(TensorMeta out, InferLookup(ctx, &w));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, out.dtype, out.shape));
      ASSIGN_OR_RETURN(bool is_sparse, ctx->Attr<bool>("is_sparse"));
      ctx->SetOutput("W@GRAD", TensorMeta{w.dtype, w.shape, is_sparse});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
