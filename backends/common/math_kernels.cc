#include "backends/common/math_kernels.h"

#include "absl/strings/str_cat.h"

namespace tandem {
namespace math_kernels_internal {
namespace {

// "float32[2, 3]"
std::string Describe(DataType dtype, const Shape& shape) {
  return absl::StrCat(DataTypeName(dtype), shape.ToString());
}

}  // namespace

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

absl::StatusOr<BinaryShapes> GetBinaryShapes(const KernelContext& ctx, const Tensor& x,
                                             const Tensor& y, int64_t axis) {
  RETURN_IF_ERROR(CheckSameDtype(ctx, x, y));
  const std::string& op = ctx.op().type;
  BinaryShapes shapes;
  ASSIGN_OR_RETURN(shapes.y_aligned, AlignForBroadcast(op, x.shape(), y.shape(), axis));
  ASSIGN_OR_RETURN(shapes.out, BroadcastShapes(op, x.shape(), y.shape(), axis));
  return shapes;
}

absl::Status ReadReduceAttrs(const OpDesc& op, ReduceAttrs* attrs) {
  ASSIGN_OR_RETURN(attrs->dims, GetAttr<std::vector<int64_t>>(op.attrs, "dim", op.type));
  ASSIGN_OR_RETURN(attrs->keep_dim, GetAttr<bool>(op.attrs, "keep_dim", op.type));
  ASSIGN_OR_RETURN(attrs->reduce_all, GetAttr<bool>(op.attrs, "reduce_all", op.type));
  return absl::OkStatus();
}

absl::StatusOr<ReduceDims> GetReduceDims(const KernelContext& ctx, const Shape& x,
                                         const ReduceAttrs& attrs, bool mean) {
  const std::string& op = ctx.op().type;
  ASSIGN_OR_RETURN(ReduceDims r, ReduceShape(op, x, attrs.dims, attrs.keep_dim, attrs.reduce_all));
  if (mean) RETURN_IF_ERROR(CheckMeanCount(op, x, r));
  return r;
}

absl::Status ReadNumColDims(const OpDesc& op, int64_t* xn, int64_t* yn) {
  ASSIGN_OR_RETURN(*xn, GetAttr<int64_t>(op.attrs, "x_num_col_dims", op.type));
  ASSIGN_OR_RETURN(*yn, GetAttr<int64_t>(op.attrs, "y_num_col_dims", op.type));
  return absl::OkStatus();
}

absl::StatusOr<FlatMatmulDims> GetMulDims(const KernelContext& ctx, const Tensor& x,
                                          const Tensor& y, int64_t xn, int64_t yn) {
  RETURN_IF_ERROR(CheckSameDtype(ctx, x, y));
  return FlatMatmulShape(ctx.op().type, {"X", x.shape(), xn, "x_num_col_dims"},
                         {"Y", y.shape(), yn, "y_num_col_dims"});
}

}  // namespace math_kernels_internal
}  // namespace tandem
