#include "backends/common/reshape_kernels.h"

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "ops/array/shape_fns.h"

namespace tandem {

absl::Status ReshapeKernel::Init(const OpDesc& op) {
  ASSIGN_OR_RETURN(shape_, GetAttr<std::vector<int64_t>>(op.attrs, "shape", op.type));
  return absl::OkStatus();
}

absl::Status ReshapeKernel::Compute(KernelContext* ctx) {
  ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(const Shape out, ReshapeShape(ctx->op().type, x->shape(), shape_));
  return ctx->SetOutput("Out", x->Reshaped(out));
}

absl::Status ReshapeGradKernel::Compute(KernelContext* ctx) {
  ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
  if (dout->dtype() != x->dtype() || dout->NumElements() != x->NumElements()) {
    return ctx->InvalidArgument(absl::StrCat(
        "Out@GRAD ", DataTypeName(dout->dtype()), dout->shape().ToString(), " does not match X ",
        DataTypeName(x->dtype()), x->shape().ToString(), " (same dtype and element count needed)"));
  }
  return ctx->SetOutput("X@GRAD", dout->Reshaped(x->shape()));
}

}  // namespace tandem
