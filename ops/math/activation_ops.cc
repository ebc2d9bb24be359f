// The activations relu, sigmoid and tanh, and their gradient ops, which
// read the forward Out (not X).
#include <string>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// Registers `type` (Out = f(X), float32 / float64, same shape) and
// `type`_grad (Out, Out@GRAD -> X@GRAD).
void RegisterActivation(const std::string& type, const std::string& doc,
                        const std::string& grad_doc) {
  OpRegistry::Global()
      .Register(type)
      .Doc(doc + "; float32 and float64, Out has X's shape.")
      .Input("X")
      .Output("Out")
      .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
        ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
        RETURN_IF_ERROR(CheckFloating(ctx->op().type, "X", x.dtype));
        ctx->SetOutput("Out", x);
        return absl::OkStatus();
      })
      .SetGradMaker(
          [type](const OpDesc& fwd, const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
            if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
            OpDesc g;
            g.type = type + "_grad";
            g.inputs["Out"] = {fwd.Output("Out")};
            g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
            g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
            return std::vector<OpDesc>{g};
          });

  OpRegistry::Global()
      .Register(type + "_grad")
      .Doc(grad_doc + "; Out@GRAD has Out's dtype and shape.")
      .Input("Out")
      .Input("Out@GRAD")
      .Output("X@GRAD")
      .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
        ASSIGN_OR_RETURN(TensorMeta out, ctx->Input("Out"));
        RETURN_IF_ERROR(CheckFloating(ctx->op().type, "Out", out.dtype));
        ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
        RETURN_IF_ERROR(
            CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, out.dtype, out.shape));
        ctx->SetOutput("X@GRAD", out);
        return absl::OkStatus();
      });
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterActivation("relu", "Out = X if X > 0, else 0", "X@GRAD = Out@GRAD where Out > 0, else 0");
  RegisterActivation("sigmoid",
                     "Out = 1 / (1 + exp(-X)), computed as exp(X) / (1 + exp(X)) for X < 0 so "
                     "that exp never overflows",
                     "X@GRAD = Out@GRAD * Out * (1 - Out)");
  RegisterActivation("tanh", "Out = tanh(X)", "X@GRAD = Out@GRAD * (1 - Out^2)");
  return true;
}();

}  // namespace
}  // namespace tandem
