// conv2d (NCHW, grouped, strided, padded, dilated), and its gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace {

// The geometry after validating dtypes, shapes and attrs.
absl::StatusOr<Conv2DGeometry> InferConv(InferShapeContext* ctx, DataType* dtype) {
  ASSIGN_OR_RETURN(TensorMeta input, ctx->Input("Input"));
  ASSIGN_OR_RETURN(TensorMeta filter, ctx->Input("Filter"));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, "Input", input.dtype));
  if (filter.dtype != input.dtype) {
    return ctx->Error(absl::StrCat("Filter is ", DataTypeName(filter.dtype), " but Input is ",
                                   DataTypeName(input.dtype)));
  }
  ASSIGN_OR_RETURN(Conv2DParams p, ReadConv2DParams(ctx->op()));
  *dtype = input.dtype;
  return Conv2DShape(ctx->op().type, input.shape, filter.shape, p);
}

constexpr char kDoc[] =
    "Output[n, m, y, x] = sum over c in group g = m / (M / groups), i, j of "
    "Input[n, g * C / groups + c, y * stride_h - pad_h + i * dilation_h, "
    "x * stride_w - pad_w + j * dilation_w] * Filter[m, c, i, j], positions "
    "outside Input reading 0. Input NCHW [N, C, H, W], Filter [M, C / groups, "
    "KH, KW], Output [N, M, OH, OW] with OH = (H + 2 * pad_h - (dilation_h * "
    "(KH - 1) + 1)) / stride_h + 1, likewise OW. No bias. float32, float64.";

REGISTER_OP("conv2d")
    .Doc(kDoc)
    .Input("Input")
    .Input("Filter")
    .Output("Output")
    .Attr<std::vector<int64_t>>("strides", {1, 1})
    .Attr<std::vector<int64_t>>("paddings", {0, 0}, "zeros added on both sides (height, width)")
    .Attr<std::vector<int64_t>>("dilations", {1, 1})
    .Attr<int64_t>("groups", 1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      DataType dtype;
      ASSIGN_OR_RETURN(Conv2DGeometry g, InferConv(ctx, &dtype));
      ctx->SetOutput("Output", TensorMeta{dtype, g.output});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      OpDesc g;
      g.type = "conv2d_grad";
      g.inputs["Input"] = {fwd.Input("Input")};
      g.inputs["Filter"] = {fwd.Input("Filter")};
      g.inputs["Output@GRAD"] = {GradVarName(fwd.Output("Output"))};
      for (const char* arg : {"Input", "Filter"}) {
        if (ctx.Wants(fwd.Input(arg))) {
          g.outputs[GradVarName(arg)] = {GradVarName(fwd.Input(arg))};
        }
      }
      if (g.outputs.empty()) return std::vector<OpDesc>{};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("conv2d_grad")
    .Doc(
        "Input@GRAD and Filter@GRAD (each optional) of conv2d from Output@GRAD, "
        "with the forward's attrs: Input@GRAD[n, C-channel, h, w] sums "
        "Output@GRAD * Filter over the outputs that read that input position; "
        "Filter@GRAD[m, c, i, j] sums Output@GRAD * Input over the batch and the "
        "output positions.")
    .Input("Input")
    .Input("Filter")
    .Input("Output@GRAD")
    .OptionalOutput("Input@GRAD")
    .OptionalOutput("Filter@GRAD")
    .Attr<std::vector<int64_t>>("strides", {1, 1})
    .Attr<std::vector<int64_t>>("paddings", {0, 0})
    .Attr<std::vector<int64_t>>("dilations", {1, 1})
    .Attr<int64_t>("groups", 1)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      DataType dtype;
      ASSIGN_OR_RETURN(Conv2DGeometry g, InferConv(ctx, &dtype));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Output@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Output@GRAD", dout.dtype, dout.shape, dtype, g.output));
      ASSIGN_OR_RETURN(TensorMeta input, ctx->Input("Input"));
      ASSIGN_OR_RETURN(TensorMeta filter, ctx->Input("Filter"));
      ctx->SetOutput("Input@GRAD", input);
      ctx->SetOutput("Filter@GRAD", filter);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
