// Gradient clipping by global norm (PyTorch's clip_grad_norm_, Paddle's
// GradientClipByGlobalNorm): squared_l2_norm per gradient, where the
// gradient is; global_norm_clip turns their sum into the factor every
// gradient is multiplied by. Optimizer::EnableGradientClipping appends them.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("squared_l2_norm")
    .Doc(
        "Out = sum of X's squared values, with one element: float32 for float32, bfloat16 and "
        "float16 X, float64 for float64 (sums accumulate in double; 0 for an empty X). X is "
        "dense.")
    .Input("X")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      if (!IsFloating(x.dtype) || x.selected_rows) {
        return ctx->Error(
            absl::StrCat("X '", ctx->op().Input("X"), "' must be a dense floating tensor, got ",
                         x.selected_rows ? "selected rows of " : "", DataTypeName(x.dtype)));
      }
      ctx->SetOutput("Out", TensorMeta{ComputeDataType(x.dtype), Shape({1})});
      return absl::OkStatus();
    });

REGISTER_OP("global_norm_clip")
    .Doc(
        "GlobalNorm = sqrt(sum of SquaredNorms) (one or more squared_l2_norm outputs of one "
        "dtype, float32 or float64) and Scale = min(1, max_norm / (GlobalNorm + 1e-6)), the "
        "factor the gradients are multiplied by (PyTorch's clip_grad_norm_); both of the "
        "norms' dtype with one element, all on the op's place (the device's kernel reads the "
        "norms and writes the factor there: no update waits on the host). A non-finite norm (an "
        "overflowed "
        "float16 step) gives Scale 0 when it is inf and NaN when it is NaN.")
    .DuplicableInput("SquaredNorms")
    .Output("Scale")
    .Output("GlobalNorm")
    .Attr<double>("max_norm", 1.0, "the largest global norm left unscaled; finite, > 0")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(double max_norm, ctx->Attr<double>("max_norm"));
      if (!(max_norm > 0) || std::isinf(max_norm)) {
        return ctx->Error(
            absl::StrCat("attribute max_norm must be finite and > 0, got ", max_norm));
      }
      if (ctx->InputCount("SquaredNorms") < 1) return ctx->Error("needs one or more SquaredNorms");
      ASSIGN_OR_RETURN(TensorMeta first, ctx->Input("SquaredNorms", 0));
      if (first.dtype != DataType::kFloat64) first.dtype = DataType::kFloat32;
      for (int i = 0; i < ctx->InputCount("SquaredNorms"); ++i) {
        ASSIGN_OR_RETURN(TensorMeta norm, ctx->Input("SquaredNorms", i));
        RETURN_IF_ERROR(CheckScalarArg(ctx->op(), "SquaredNorms", norm, first.dtype));
      }
      ctx->SetOutput("Scale", TensorMeta{first.dtype, Shape({1})});
      ctx->SetOutput("GlobalNorm", TensorMeta{first.dtype, Shape({1})});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
