// reduce_sum and reduce_mean over chosen dims, and their gradient ops.
#include <string>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// X's meta and the reduction geometry from the attrs, validated; a mean
// needs at least one element per output element.
absl::StatusOr<ReduceDims> InferReduce(InferShapeContext* ctx, bool mean, TensorMeta* x) {
  ASSIGN_OR_RETURN(*x, ctx->Input("X"));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, "X", x->dtype));
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx->Attr<std::vector<int64_t>>("dim"));
  ASSIGN_OR_RETURN(bool keep_dim, ctx->Attr<bool>("keep_dim"));
  ASSIGN_OR_RETURN(bool reduce_all, ctx->Attr<bool>("reduce_all"));
  ASSIGN_OR_RETURN(ReduceDims r, ReduceShape(ctx->op().type, x->shape, dims, keep_dim, reduce_all));
  if (mean) RETURN_IF_ERROR(CheckMeanCount(ctx->op().type, x->shape, r));
  return r;
}

// Registers `type` and `type`_grad with the shared attributes.
void RegisterReduce(const std::string& type, bool mean, const std::string& doc,
                    const std::string& grad_doc) {
  OpSchema& fwd = OpRegistry::Global().Register(type);
  OpSchema& grad = OpRegistry::Global().Register(type + "_grad");
  for (OpSchema* s : {&fwd, &grad}) {
    s->Attr<std::vector<int64_t>>("dim", {},
                                  "dims to reduce, negative counting from the end; empty: all")
        .Attr<bool>("keep_dim", false, "keep the reduced dims as 1")
        .Attr<bool>("reduce_all", false, "reduce every dim whatever dim says");
  }
  fwd.Doc(doc +
          " float32 / float64. Out is X without the reduced dims ([1] when none is left), or "
          "with them as 1 if keep_dim. A dim out of range or listed twice is InvalidArgument.")
      .Input("X")
      .Output("Out")
      .SetInferShape([mean](InferShapeContext* ctx) -> absl::Status {
        TensorMeta x;
        ASSIGN_OR_RETURN(ReduceDims r, InferReduce(ctx, mean, &x));
        ctx->SetOutput("Out", TensorMeta{x.dtype, r.out});
        return absl::OkStatus();
      })
      .SetGradMaker(
          [type](const OpDesc& op, const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
            if (!ctx.Wants(op.Input("X"))) return std::vector<OpDesc>{};
            OpDesc g;
            g.type = type + "_grad";
            g.inputs["X"] = {op.Input("X")};
            g.inputs["Out@GRAD"] = {GradVarName(op.Output("Out"))};
            g.outputs["X@GRAD"] = {GradVarName(op.Input("X"))};
            g.attrs = op.attrs;
            return std::vector<OpDesc>{g};
          });
  grad.Doc(grad_doc)
      .Input("X")
      .Input("Out@GRAD")
      .Output("X@GRAD")
      .SetInferShape([mean](InferShapeContext* ctx) -> absl::Status {
        TensorMeta x;
        ASSIGN_OR_RETURN(ReduceDims r, InferReduce(ctx, mean, &x));
        ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
        RETURN_IF_ERROR(
            CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, x.dtype, r.out));
        ctx->SetOutput("X@GRAD", x);
        return absl::OkStatus();
      });
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterReduce("reduce_sum", /*mean=*/false,
                 "Out = the sum of X over attr dim (float32 sums in double).",
                 "X@GRAD = Out@GRAD broadcast back over the reduced dims.");
  RegisterReduce("reduce_mean", /*mean=*/true,
                 "Out = the mean of X over attr dim (float32 sums in double); reducing over "
                 "zero elements is InvalidArgument.",
                 "X@GRAD = Out@GRAD / (elements per mean) broadcast back over the reduced dims.");
  return true;
}();

}  // namespace
}  // namespace tandem
