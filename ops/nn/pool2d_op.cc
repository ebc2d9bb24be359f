// pool2d (max or average, NCHW), and its gradient op.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace {

// X's meta and the geometry after validating dtype, shape and attrs.
absl::StatusOr<Pool2DGeometry> InferPool(InferShapeContext* ctx, TensorMeta* x_out) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, "X", x.dtype));
  ASSIGN_OR_RETURN(Pool2DParams p, ReadPool2DParams(ctx->op()));
  *x_out = x;
  return Pool2DShape(ctx->op().type, x.shape, p);
}

REGISTER_OP("pool2d")
    .Doc(
        "Out[n, c, y, x] pools the window of X[n, c] (NCHW) whose rows are "
        "[y * stride_h - pad_h, ... + ksize_h) and columns likewise, clipped to X: "
        "max takes its largest value; avg its sum divided by the clipped window's "
        "element count (exclusive) or by ksize_h * ksize_w. OH = (H + 2 * pad_h - "
        "ksize_h) / stride_h + 1, likewise OW; global_pooling pools whole planes "
        "(OH = OW = 1). float32, float64.")
    .Input("X")
    .Output("Out")
    .Attr<std::string>("pooling_type", "max", "\"max\" or \"avg\"")
    .Attr<std::vector<int64_t>>("ksize", {}, "window (height, width); unused when global")
    .Attr<std::vector<int64_t>>("strides", {1, 1})
    .Attr<std::vector<int64_t>>("paddings", {0, 0}, "on both sides, each < ksize")
    .Attr<bool>("global_pooling", false, "the window is the whole plane")
    .Attr<bool>("exclusive", true, "avg divides by the window's elements inside X")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(Pool2DGeometry g, InferPool(ctx, &x));
      ctx->SetOutput("Out", TensorMeta{x.dtype, g.out});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "pool2d_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Out"] = {fwd.Output("Out")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("pool2d_grad")
    .Doc(
        "X@GRAD of pool2d, with the forward's attrs. max: each Out@GRAD goes to "
        "the first element (row-major) of its window equal to Out; avg: each "
        "Out@GRAD, divided as in the forward, goes to every element of its "
        "clipped window. Overlapping windows add up.")
    .Input("X")
    .Input("Out")
    .Input("Out@GRAD")
    .Output("X@GRAD")
    .Attr<std::string>("pooling_type", "max")
    .Attr<std::vector<int64_t>>("ksize", {})
    .Attr<std::vector<int64_t>>("strides", {1, 1})
    .Attr<std::vector<int64_t>>("paddings", {0, 0})
    .Attr<bool>("global_pooling", false)
    .Attr<bool>("exclusive", true)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(Pool2DGeometry g, InferPool(ctx, &x));
      for (const char* arg : {"Out", "Out@GRAD"}) {
        ASSIGN_OR_RETURN(TensorMeta m, ctx->Input(arg));
        RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, arg, m.dtype, m.shape, x.dtype, g.out));
      }
      ctx->SetOutput("X@GRAD", x);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
