// shape: Out = the dims of Input as int32 [rank].
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

REGISTER_OP("shape")
    .Doc(
        "Out = the dims of Input, int32 of shape [rank(Input)]. Input's values "
        "are not read.")
    .Input("Input")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta input, ctx->Input("Input"));
      ctx->SetOutput("Out", TensorMeta{DataType::kInt32, Shape({input.shape.rank()})});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
