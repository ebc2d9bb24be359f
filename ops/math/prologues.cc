#include "ops/math/prologues.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace prologue {
namespace {

// "float32[2, 3]"
std::string Describe(DataType dtype, const Shape& shape) {
  return absl::StrCat(DataTypeName(dtype), shape.ToString());
}

}  // namespace

absl::StatusOr<Tensor*> AllocateIfBound(KernelContext* ctx, absl::string_view arg, DataType dtype,
                                        const Shape& shape) {
  if (ctx->OutputVar(arg) == nullptr) return nullptr;
  return ctx->AllocateOutput(arg, dtype, shape);
}

absl::Status CheckSameDtype(const KernelContext& ctx, const Tensor& x, const Tensor& y) {
  if (x.dtype() == y.dtype()) return absl::OkStatus();
  return ctx.InvalidArgument(absl::StrCat("X is ", Describe(x.dtype(), x.shape()), " but Y is ",
                                          Describe(y.dtype(), y.shape()), "; cast one of them"));
}

absl::Status CheckOutGrad(const KernelContext& ctx, const Tensor& dout, DataType dtype,
                          const Shape& expected) {
  if (dout.dtype() == dtype && dout.shape() == expected) return absl::OkStatus();
  return ctx.InvalidArgument(absl::StrCat("Out@GRAD is ", Describe(dout.dtype(), dout.shape()),
                                          ", expected ", Describe(dtype, expected)));
}

absl::Status FillConstantAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                   GetAttr<std::vector<int64_t>>(op.attrs, "shape", op.type));
  absl::StatusOr<Shape> made = Shape::Make(dims);
  if (!made.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op.type, "': attribute 'shape': ", made.status().message()));
  }
  shape = *std::move(made);
  ASSIGN_OR_RETURN(value, GetAttr<double>(op.attrs, "value", op.type));
  ASSIGN_OR_RETURN(dtype, GetAttr<DataType>(op.attrs, "dtype", op.type));
  return absl::OkStatus();
}

absl::Status ScaleAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(scale, GetAttr<double>(op.attrs, "scale", op.type));
  ASSIGN_OR_RETURN(bias, GetAttr<double>(op.attrs, "bias", op.type));
  ASSIGN_OR_RETURN(bias_after_scale, GetAttr<bool>(op.attrs, "bias_after_scale", op.type));
  return absl::OkStatus();
}

absl::StatusOr<BinaryShapes> GetBinaryShapes(const KernelContext& ctx, const Tensor& x,
                                             const Tensor& y, int64_t axis) {
  RETURN_IF_ERROR(CheckSameDtype(ctx, x, y));
  const std::string& op = ctx.op().type;
  BinaryShapes shapes;
  ASSIGN_OR_RETURN(shapes.y_aligned, AlignForBroadcast(op, x.shape(), y.shape(), axis));
  ASSIGN_OR_RETURN(shapes.out, BroadcastShapes(op, x.shape(), y.shape(), axis));
  return shapes;
}

absl::StatusOr<ElementwiseGradArgs> GetElementwiseGradArgs(const KernelContext& ctx, int64_t axis,
                                                           bool reads_out) {
  ElementwiseGradArgs a;
  ASSIGN_OR_RETURN(a.x, ctx.InputTensor("X"));
  ASSIGN_OR_RETURN(a.y, ctx.InputTensor("Y"));
  ASSIGN_OR_RETURN(a.dout, ctx.InputTensor("Out@GRAD"));
  ASSIGN_OR_RETURN(a.shapes, GetBinaryShapes(ctx, *a.x, *a.y, axis));
  RETURN_IF_ERROR(CheckOutGrad(ctx, *a.dout, a.x->dtype(), a.shapes.out));
  if (reads_out) {
    ASSIGN_OR_RETURN(a.out, ctx.InputTensor("Out"));
    RETURN_IF_ERROR(CheckArgMeta(ctx.op().type, "Out", a.out->dtype(), a.out->shape(), a.x->dtype(),
                                 a.shapes.out));
  }
  return a;
}

bool GradientsUnbroadcast(const KernelContext& ctx, const ElementwiseGradArgs& a) {
  const int64_t n = a.shapes.out.num_elements();
  return (ctx.OutputVar("X@GRAD") == nullptr || a.x->NumElements() == n) &&
         (ctx.OutputVar("Y@GRAD") == nullptr || a.y->NumElements() == n);
}

absl::StatusOr<bool> ForwardAddGradients(KernelContext* ctx, const ElementwiseGradArgs& a) {
  if (!ctx->may_forward_inputs() || !GradientsUnbroadcast(*ctx, a)) return false;
  if (ctx->OutputVar("X@GRAD") != nullptr) {
    RETURN_IF_ERROR(ctx->SetOutput("X@GRAD", a.dout->Reshaped(a.x->shape())));
  }
  if (ctx->OutputVar("Y@GRAD") != nullptr) {
    RETURN_IF_ERROR(ctx->SetOutput("Y@GRAD", a.dout->Reshaped(a.y->shape())));
  }
  return true;
}

absl::Status MatmulAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(tx, GetAttr<bool>(op.attrs, "transpose_X", op.type));
  ASSIGN_OR_RETURN(ty, GetAttr<bool>(op.attrs, "transpose_Y", op.type));
  ASSIGN_OR_RETURN(alpha, GetAttr<double>(op.attrs, "alpha", op.type));
  return absl::OkStatus();
}

absl::StatusOr<MatmulArgs> GetMatmulArgs(const KernelContext& ctx, const MatmulAttrs& attrs,
                                         bool grad) {
  MatmulArgs a;
  ASSIGN_OR_RETURN(a.x, ctx.InputTensor("X"));
  ASSIGN_OR_RETURN(a.y, ctx.InputTensor("Y"));
  if (grad) {
    ASSIGN_OR_RETURN(a.dout, ctx.InputTensor("Out@GRAD"));
  }
  RETURN_IF_ERROR(CheckSameDtype(ctx, *a.x, *a.y));
  ASSIGN_OR_RETURN(a.d, MatmulShape(ctx.op().type, a.x->shape(), a.y->shape(), attrs.tx, attrs.ty));
  if (grad) RETURN_IF_ERROR(CheckOutGrad(ctx, *a.dout, a.x->dtype(), a.d.out));
  return a;
}

absl::Status ReduceAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(dims, GetAttr<std::vector<int64_t>>(op.attrs, "dim", op.type));
  ASSIGN_OR_RETURN(keep_dim, GetAttr<bool>(op.attrs, "keep_dim", op.type));
  ASSIGN_OR_RETURN(reduce_all, GetAttr<bool>(op.attrs, "reduce_all", op.type));
  return absl::OkStatus();
}

absl::StatusOr<ReduceDims> GetReduceDims(const KernelContext& ctx, const Shape& x,
                                         const ReduceAttrs& attrs, bool mean) {
  const std::string& op = ctx.op().type;
  ASSIGN_OR_RETURN(ReduceDims r, ReduceShape(op, x, attrs.dims, attrs.keep_dim, attrs.reduce_all));
  if (mean) RETURN_IF_ERROR(CheckMeanCount(op, x, r));
  return r;
}

absl::StatusOr<ReduceGradArgs> GetReduceGradArgs(KernelContext* ctx, const ReduceAttrs& attrs,
                                                 bool mean) {
  ReduceGradArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.dout, ctx->InputTensor("Out@GRAD"));
  ASSIGN_OR_RETURN(a.r, GetReduceDims(*ctx, a.x->shape(), attrs, mean));
  RETURN_IF_ERROR(CheckOutGrad(*ctx, *a.dout, a.x->dtype(), a.r.out));
  ASSIGN_OR_RETURN(a.dx, ctx->AllocateOutput("X@GRAD", a.x->dtype(), a.x->shape()));
  return a;
}

absl::Status NumColDims::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(x, GetAttr<int64_t>(op.attrs, "x_num_col_dims", op.type));
  ASSIGN_OR_RETURN(y, GetAttr<int64_t>(op.attrs, "y_num_col_dims", op.type));
  return absl::OkStatus();
}

absl::StatusOr<FlatMatmulDims> GetMulDims(const KernelContext& ctx, const Tensor& x,
                                          const Tensor& y, const NumColDims& cols) {
  RETURN_IF_ERROR(CheckSameDtype(ctx, x, y));
  return FlatMatmulShape(ctx.op().type, {"X", x.shape(), cols.x, "x_num_col_dims"},
                         {"Y", y.shape(), cols.y, "y_num_col_dims"});
}

absl::StatusOr<MulArgs> GetMulArgs(KernelContext* ctx, const NumColDims& cols) {
  MulArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.y, ctx->InputTensor("Y"));
  ASSIGN_OR_RETURN(a.d, GetMulDims(*ctx, *a.x, *a.y, cols));
  ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput("Out", a.x->dtype(), a.d.out));
  return a;
}

absl::StatusOr<MulGradArgs> GetMulGradArgs(KernelContext* ctx, const NumColDims& cols) {
  MulGradArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.y, ctx->InputTensor("Y"));
  ASSIGN_OR_RETURN(a.dout, ctx->InputTensor("Out@GRAD"));
  ASSIGN_OR_RETURN(a.d, GetMulDims(*ctx, *a.x, *a.y, cols));
  RETURN_IF_ERROR(CheckOutGrad(*ctx, *a.dout, a.x->dtype(), a.d.out));
  ASSIGN_OR_RETURN(a.dx, AllocateIfBound(ctx, "X@GRAD", a.x->dtype(), a.x->shape()));
  ASSIGN_OR_RETURN(a.dy, AllocateIfBound(ctx, "Y@GRAD", a.y->dtype(), a.y->shape()));
  return a;
}

absl::StatusOr<ActivationGradArgs> GetActivationGradArgs(KernelContext* ctx,
                                                         absl::string_view fwd_arg) {
  ActivationGradArgs a;
  ASSIGN_OR_RETURN(a.fwd, ctx->InputTensor(fwd_arg));
  ASSIGN_OR_RETURN(a.dout, ctx->InputTensor("Out@GRAD"));
  RETURN_IF_ERROR(CheckOutGrad(*ctx, *a.dout, a.fwd->dtype(), a.fwd->shape()));
  ASSIGN_OR_RETURN(a.dx, ctx->AllocateOutput("X@GRAD", a.fwd->dtype(), a.fwd->shape()));
  return a;
}

}  // namespace prologue
}  // namespace tandem
