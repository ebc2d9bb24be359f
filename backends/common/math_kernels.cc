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

absl::Status WithOpName(const KernelContext& ctx, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("op '", ctx.op().type, "': ", status.message()));
}

absl::StatusOr<AddShapes> GetAddShapes(const KernelContext& ctx, const Tensor& x, const Tensor& y,
                                       int64_t axis) {
  RETURN_IF_ERROR(CheckSameDtype(ctx, x, y));
  const std::string& op = ctx.op().type;
  AddShapes shapes;
  ASSIGN_OR_RETURN(shapes.y_aligned, AlignForBroadcast(op, x.shape(), y.shape(), axis));
  ASSIGN_OR_RETURN(shapes.out, BroadcastShapes(op, x.shape(), y.shape(), axis));
  return shapes;
}

}  // namespace math_kernels_internal
}  // namespace tandem
