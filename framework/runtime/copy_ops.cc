// Schemas of the copy ops the placer inserts. The executor runs them
// itself (they have no kernels): a copy is a device transfer, not compute.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

absl::Status SameAsInput(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  ctx->SetOutput("Out", x);
  return absl::OkStatus();
}

REGISTER_OP("memcpy_h2d")
    .Doc("Out = X copied from the host to the op's device (inserted by the placer).")
    .Input("X")
    .Output("Out")
    .Attr<std::string>("reason", "", "why the placer inserted the copy")
    .Attr<std::string>("consumer", "", "type of the op whose input needed the copy")
    .SetInferShape(SameAsInput);

REGISTER_OP("memcpy_d2h")
    .Doc("Out = X copied from the op's device to the host (inserted by the placer).")
    .Input("X")
    .Output("Out")
    .Attr<std::string>("reason", "", "why the placer inserted the copy")
    .Attr<std::string>("consumer", "", "type of the op whose input needed the copy")
    .SetInferShape(SameAsInput);

}  // namespace
}  // namespace tandem
