#include "backends/common/optimizer_kernels.h"

#include "absl/strings/str_cat.h"
#include "framework/op/op_schema.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace optimizer_kernels_internal {

absl::StatusOr<SgdArgs> GetSgdArgs(const KernelContext& ctx) {
  SgdArgs a;
  ASSIGN_OR_RETURN(a.param, ctx.InputTensor("Param"));
  ASSIGN_OR_RETURN(const Tensor* lr, ctx.InputTensor("LearningRate"));
  a.grad = ctx.InputVar("Grad");
  const Tensor* grad_data = a.grad == nullptr ? nullptr : a.grad->data_tensor();
  if (grad_data == nullptr || !grad_data->initialized()) {
    return ctx.InvalidArgument(absl::StrCat("input 'Grad' (variable '", ctx.InputName("Grad"),
                                            "') is missing or not initialised"));
  }
  const bool sparse = a.grad->is_selected_rows();
  const Shape grad_shape = sparse ? a.grad->selected_rows().DenseShape() : grad_data->shape();
  RETURN_IF_ERROR(CheckSgdArgs(ctx.op(), {a.param->dtype(), a.param->shape()},
                               {grad_data->dtype(), grad_shape, sparse},
                               {lr->dtype(), lr->shape()}));
  a.learning_rate = lr->data<float>()[0];
  if (!sparse) return a;
  const SelectedRows& g = a.grad->selected_rows();
  const int64_t n = static_cast<int64_t>(g.rows().size());
  if (grad_data->shape().rank() == 0 || grad_data->shape().dim(0) != n) {
    return ctx.InvalidArgument(absl::StrCat("Grad '", ctx.InputName("Grad"), "' has ", n,
                                            " rows but a value of shape ",
                                            grad_data->shape().ToString()));
  }
  const int64_t bad = FirstOutOfRange(g.rows().data(), n, g.height());
  if (bad >= 0) {
    return ctx.InvalidArgument(absl::StrCat(
        "row ", g.rows()[bad], " at position ", bad, " of Grad '", ctx.InputName("Grad"),
        "' is out of range [0, ", g.height(), ") of Param '", ctx.InputName("Param"), "'"));
  }
  return a;
}

}  // namespace optimizer_kernels_internal
}  // namespace tandem
