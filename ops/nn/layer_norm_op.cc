// layer_norm, and its gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace {

// X's meta and dims after validating X, the optional Scale and Bias, and
// attr begin_norm_axis.
absl::StatusOr<LayerNormDims> InferNorm(InferShapeContext* ctx, TensorMeta* x_out) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, "X", x.dtype));
  ASSIGN_OR_RETURN(int64_t axis, ctx->Attr<int64_t>("begin_norm_axis"));
  ASSIGN_OR_RETURN(LayerNormDims d, LayerNormShape(ctx->op().type, x.shape, axis));
  for (const char* arg : {"Scale", "Bias"}) {
    if (!ctx->HasInput(arg)) continue;
    ASSIGN_OR_RETURN(TensorMeta m, ctx->Input(arg));
    const bool unknown = d.cols < 0 || (m.shape.rank() == 1 && m.shape.dim(0) < 0);
    if (m.dtype != x.dtype || m.shape.rank() != 1 || (!unknown && m.shape.dim(0) != d.cols)) {
      return ctx->Error(absl::StrCat(arg, " is ", DataTypeName(m.dtype), m.shape.ToString(),
                                     ", expected ", DataTypeName(x.dtype), "[", d.cols, "] for X ",
                                     x.shape.ToString(), " normalized from dim ", d.axis));
    }
  }
  *x_out = x;
  return d;
}

REGISTER_OP("layer_norm")
    .Doc(
        "Views X as rows = prod(dims before begin_norm_axis) by D = prod(the "
        "rest); per row Mean = sum(x) / D, Variance = sum((x - Mean)^2) / D "
        "(biased) and Y = (x - Mean) / sqrt(Variance + epsilon) * Scale + Bias, "
        "Scale and Bias ([D], optional) applied per column. Y has X's shape; Mean "
        "and Variance are [rows]. float32, float64; sums accumulate in double.")
    .Input("X")
    .OptionalInput("Scale")
    .OptionalInput("Bias")
    .Output("Y")
    .Output("Mean")
    .Output("Variance")
    .Attr<int64_t>("begin_norm_axis", 1, "first normalized dim; negative counts from the end")
    .Attr<double>("epsilon", 1e-5)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(LayerNormDims d, InferNorm(ctx, &x));
      ctx->SetOutput("Y", x);
      ctx->SetOutput("Mean", TensorMeta{x.dtype, Shape({d.rows})});
      ctx->SetOutput("Variance", TensorMeta{x.dtype, Shape({d.rows})});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      auto has = [&fwd](const char* arg) {
        auto it = fwd.inputs.find(arg);
        return it != fwd.inputs.end() && !it->second.empty();
      };
      OpDesc g;
      g.type = "layer_norm_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Mean"] = {fwd.Output("Mean")};
      g.inputs["Variance"] = {fwd.Output("Variance")};
      g.inputs["Y@GRAD"] = {GradVarName(fwd.Output("Y"))};
      if (has("Scale")) g.inputs["Scale"] = {fwd.Input("Scale")};
      for (const char* arg : {"X", "Scale", "Bias"}) {
        if (has(arg) && ctx.Wants(fwd.Input(arg))) {
          g.outputs[GradVarName(arg)] = {GradVarName(fwd.Input(arg))};
        }
      }
      if (g.outputs.empty()) return std::vector<OpDesc>{};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("layer_norm_grad")
    .Doc(
        "Gradients of layer_norm's Y (Mean and Variance pass none back), each "
        "optional. With xhat = (x - Mean) * r, r = 1 / sqrt(Variance + epsilon) "
        "and g = Y@GRAD * Scale (Scale absent: 1): X@GRAD = r * (g - mean(g) - "
        "xhat * mean(g * xhat)) per row; Scale@GRAD = sum over rows of Y@GRAD * "
        "xhat; Bias@GRAD = sum over rows of Y@GRAD.")
    .Input("X")
    .OptionalInput("Scale")
    .Input("Mean")
    .Input("Variance")
    .Input("Y@GRAD")
    .OptionalOutput("X@GRAD")
    .OptionalOutput("Scale@GRAD")
    .OptionalOutput("Bias@GRAD")
    .Attr<int64_t>("begin_norm_axis", 1)
    .Attr<double>("epsilon", 1e-5)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(LayerNormDims d, InferNorm(ctx, &x));
      for (const char* arg : {"Mean", "Variance"}) {
        ASSIGN_OR_RETURN(TensorMeta m, ctx->Input(arg));
        RETURN_IF_ERROR(
            CheckArgMeta(ctx->op().type, arg, m.dtype, m.shape, x.dtype, Shape({d.rows})));
      }
      ASSIGN_OR_RETURN(TensorMeta dy, ctx->Input("Y@GRAD"));
      RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, "Y@GRAD", dy.dtype, dy.shape, x.dtype, x.shape));
      ctx->SetOutput("X@GRAD", x);
      ctx->SetOutput("Scale@GRAD", TensorMeta{x.dtype, Shape({d.cols})});
      ctx->SetOutput("Bias@GRAD", TensorMeta{x.dtype, Shape({d.cols})});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
