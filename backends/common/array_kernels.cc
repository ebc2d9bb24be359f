#include "backends/common/array_kernels.h"

namespace tandem {
namespace array_kernels_internal {

absl::Status SliceAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(axes, GetAttr<std::vector<int64_t>>(op.attrs, "axes", op.type));
  ASSIGN_OR_RETURN(starts, GetAttr<std::vector<int64_t>>(op.attrs, "starts", op.type));
  ASSIGN_OR_RETURN(ends, GetAttr<std::vector<int64_t>>(op.attrs, "ends", op.type));
  return absl::OkStatus();
}

absl::StatusOr<Box> GetCropBox(const KernelContext& ctx, const Tensor& x,
                               const std::vector<int64_t>& offsets) {
  ASSIGN_OR_RETURN(const Tensor* shape, ctx.InputTensor("Shape"));
  const std::string& op = ctx.op().type;
  RETURN_IF_ERROR(CheckCropShapeArg(op, shape->dtype(), shape->shape()));
  const int32_t* v = shape->data<int32_t>();  // host memory (HostMemory("Shape"))
  return CropBox(op, x.shape(), std::vector<int64_t>(v, v + shape->NumElements()), offsets);
}

}  // namespace array_kernels_internal
}  // namespace tandem
