// crop_tensor: Out = the region of X of size Shape at `offsets`, and its
// gradient op. Shape is an int32 tensor read on the host.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "framework/tensor/tensor.h"
#include "ops/array/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// X's meta and Out's shape: exact when Shape's values are known, else
// unknown dims (-1) of rank len(Shape), or rank(X) if that is unknown too.
absl::StatusOr<Shape> InferOut(InferShapeContext* ctx, TensorMeta* x_out) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  if (x.dtype == DataType::kBool) return ctx->Error("X must be numeric, got bool");
  ASSIGN_OR_RETURN(TensorMeta shape, ctx->Input("Shape"));
  RETURN_IF_ERROR(CheckCropShapeArg(ctx->op().type, shape.dtype, shape.shape));
  ASSIGN_OR_RETURN(std::vector<int64_t> offsets, ctx->Attr<std::vector<int64_t>>("offsets"));
  *x_out = x;
  if (const Tensor* values = ctx->InputValues("Shape")) {
    const int32_t* v = values->data<int32_t>();
    const std::vector<int64_t> sizes(v, v + values->NumElements());
    ASSIGN_OR_RETURN(Box box, CropBox(ctx->op().type, x.shape, sizes, offsets));
    return box.shape;
  }
  const int64_t rank = shape.shape.dim(0) >= 0 ? shape.shape.dim(0) : x.shape.rank();
  if (rank != x.shape.rank()) {  // before making `rank` sizes: Shape may claim 2^62 values
    return ctx->Error(absl::StrCat("Shape has ", rank, " values but X ", x.shape.ToString(),
                                   " has rank ", x.shape.rank()));
  }
  // Sizes of -1 check the lengths of Shape and offsets and each offset.
  ASSIGN_OR_RETURN(Box box,
                   CropBox(ctx->op().type, x.shape, std::vector<int64_t>(rank, -1), offsets));
  for (int d = 0; d < box.shape.rank(); ++d) box.shape.set_dim(d, -1);
  return box.shape;
}

REGISTER_OP("crop_tensor")
    .Doc(
        "Out = X[offsets[d] : offsets[d] + Shape[d]] for every dim d. Shape is "
        "int32 [rank(X)] (a value of -1 means X.dim(d) - offsets[d]) and is read "
        "on the host; offsets defaults to zeros.")
    .Input("X")
    .Input("Shape")
    .Output("Out")
    .Attr<std::vector<int64_t>>("offsets", {}, "start of the crop per dim; empty: zeros")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(Shape out, InferOut(ctx, &x));
      ctx->SetOutput("Out", TensorMeta{x.dtype, out});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "crop_tensor_grad";
      g.inputs["X"] = {fwd.Input("X")};
      g.inputs["Shape"] = {fwd.Input("Shape")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("crop_tensor_grad")
    .Doc("X@GRAD: zeros of X's shape with the cropped region = Out@GRAD.")
    .Input("X")
    .Input("Shape")
    .Input("Out@GRAD")
    .Output("X@GRAD")
    .Attr<std::vector<int64_t>>("offsets", {})
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(Shape out, InferOut(ctx, &x));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      if (ctx->InputValues("Shape") != nullptr) {
        RETURN_IF_ERROR(
            CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, x.dtype, out));
      }
      ctx->SetOutput("X@GRAD", x);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
