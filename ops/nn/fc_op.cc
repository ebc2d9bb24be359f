// fc: a fully connected layer, Out = Input * W + Bias, and its gradient op.
#include <string>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// Input's meta and the geometry, validated (Bias when bound).
absl::StatusOr<FlatMatmulDims> InferFc(InferShapeContext* ctx, TensorMeta* input) {
  ASSIGN_OR_RETURN(*input, ctx->Input("Input"));
  ASSIGN_OR_RETURN(TensorMeta w, ctx->Input("W"));
  ASSIGN_OR_RETURN(int64_t in_num_col_dims, ctx->Attr<int64_t>("in_num_col_dims"));
  if (!ctx->HasInput("Bias")) return FcShape(ctx->op().type, *input, in_num_col_dims, w, nullptr);
  ASSIGN_OR_RETURN(TensorMeta bias, ctx->Input("Bias"));
  return FcShape(ctx->op().type, *input, in_num_col_dims, w, &bias);
}

REGISTER_OP("fc")
    .Doc(
        "Out = Input * W + Bias: Input's first in_num_col_dims dims form the rows and the rest "
        "the K columns of a matrix, W is [K, M], the optional Bias [M] is added to every row; "
        "Out is Input.dims[:in_num_col_dims] + [M]. float32 and float64.")
    .Input("Input")
    .Input("W")
    .OptionalInput("Bias")
    .Output("Out")
    .Attr<int64_t>("in_num_col_dims", 1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta input;
      ASSIGN_OR_RETURN(FlatMatmulDims d, InferFc(ctx, &input));
      ctx->SetOutput("Out", TensorMeta{input.dtype, d.out});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      OpDesc g;
      g.type = "fc_grad";
      g.inputs["Input"] = {fwd.Input("Input")};
      g.inputs["W"] = {fwd.Input("W")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      for (const char* arg : {"Input", "W", "Bias"}) {
        auto it = fwd.inputs.find(arg);
        if (it == fwd.inputs.end() || it->second.empty() || !ctx.Wants(it->second[0])) continue;
        g.outputs[std::string(arg) + "@GRAD"] = {GradVarName(it->second[0])};
      }
      if (g.outputs.empty()) return std::vector<OpDesc>{};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("fc_grad")
    .Doc(
        "Input@GRAD = Out@GRAD * W^T (shaped like Input), W@GRAD = Input^T * Out@GRAD and "
        "Bias@GRAD = the column sums of Out@GRAD, each optional.")
    .Input("Input")
    .Input("W")
    .Input("Out@GRAD")
    .OptionalOutput("Input@GRAD")
    .OptionalOutput("W@GRAD")
    .OptionalOutput("Bias@GRAD")
    .Attr<int64_t>("in_num_col_dims", 1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta input;
      ASSIGN_OR_RETURN(FlatMatmulDims d, InferFc(ctx, &input));
      ASSIGN_OR_RETURN(TensorMeta w, ctx->Input("W"));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, input.dtype, d.out));
      ctx->SetOutput("Input@GRAD", input);
      ctx->SetOutput("W@GRAD", w);
      ctx->SetOutput("Bias@GRAD", TensorMeta{input.dtype, Shape({w.shape.dim(1)})});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
