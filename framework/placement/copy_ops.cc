// Schemas of the copy ops the placer inserts. The executor runs them
// itself (they have no kernels): a copy is a device transfer, not compute.
// What a copy moves, for whom and why is typed data of the placement
// (PlacementEntry::copy and detail, placer.h), not attributes.
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
    .SetInferShape(SameAsInput);

REGISTER_OP("memcpy_d2h")
    .Doc("Out = X copied from the op's device to the host (inserted by the placer).")
    .Input("X")
    .Output("Out")
    .SetInferShape(SameAsInput);

}  // namespace
}  // namespace tandem
