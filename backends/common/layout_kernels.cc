#include "backends/common/layout_kernels.h"

namespace tandem {
namespace layout_kernels_internal {

absl::StatusOr<AxisPieces> GetConcatPieces(const KernelContext& ctx, int64_t axis,
                                           std::vector<const Tensor*>* xs) {
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx.InputCount("X"); ++i) {
    ASSIGN_OR_RETURN(const Tensor* x, ctx.InputTensor("X", i));
    if (!xs->empty() && x->dtype() != (*xs)[0]->dtype()) {
      return ctx.InvalidArgument(absl::StrCat("X[", i, "] is ", DataTypeName(x->dtype()),
                                              " but X[0] is ", DataTypeName((*xs)[0]->dtype())));
    }
    xs->push_back(x);
    shapes.push_back(x->shape());
  }
  return ConcatGeometry(ctx.op().type, shapes, axis);
}

absl::Status SplitAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(axis, GetAttr<int64_t>(op.attrs, "axis", op.type));
  ASSIGN_OR_RETURN(num, GetAttr<int64_t>(op.attrs, "num", op.type));
  ASSIGN_OR_RETURN(sections, GetAttr<std::vector<int64_t>>(op.attrs, "sections", op.type));
  return absl::OkStatus();
}

absl::Status CheckBoundCount(const KernelContext& ctx, absl::string_view what,
                             absl::string_view arg, int bound, size_t count) {
  if (bound == static_cast<int>(count)) return absl::OkStatus();
  return ctx.InvalidArgument(
      absl::StrCat(what, " ", arg, " has ", bound, " variables, expected ", count));
}

}  // namespace layout_kernels_internal
}  // namespace tandem
