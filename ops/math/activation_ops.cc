// The activations relu, sigmoid, tanh and gelu, and their gradient ops,
// which read the forward Out (gelu_grad: the forward X).
#include <string>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// What the gradient op reads besides Out@GRAD: the forward Out, or X.
enum class GradReads { kOut, kX };

// Registers `type` (Out = f(X), float32 / float64, same shape) and
// `type`_grad (Out or X, Out@GRAD -> X@GRAD). `reads` kX: the gradient reads
// X, and the op has the bool attr approximate (gelu's tanh form), which its
// gradient op keeps.
void RegisterActivation(const std::string& type, const std::string& doc,
                        const std::string& grad_doc, GradReads reads = GradReads::kOut) {
  const std::string fwd_arg = reads == GradReads::kX ? "X" : "Out";
  OpSchema& forward = OpRegistry::Global()
                          .Register(type)
                          .Doc(doc + "; float32 and float64, Out has X's shape.")
                          .Input("X")
                          .Output("Out");
  if (reads == GradReads::kX) {
    forward.Attr<bool>("approximate", false,
                       "true: the tanh approximation x / 2 * (1 + tanh(sqrt(2 / pi) * (x + "
                       "0.044715 x^3))), as in GPT-2");
  }
  forward
      .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
        ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
        RETURN_IF_ERROR(CheckFloating(ctx->op().type, "X", x.dtype));
        ctx->SetOutput("Out", x);
        return absl::OkStatus();
      })
      .SetGradMaker([type, fwd_arg](const OpDesc& fwd,
                                    const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
        if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
        OpDesc g;
        g.type = type + "_grad";
        g.inputs[fwd_arg] = {fwd_arg == "X" ? fwd.Input("X") : fwd.Output("Out")};
        g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
        g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
        g.attrs = fwd.attrs;
        return std::vector<OpDesc>{g};
      });

  OpSchema& backward = OpRegistry::Global()
                           .Register(type + "_grad")
                           .Doc(grad_doc + "; Out@GRAD has " + fwd_arg + "'s dtype and shape.")
                           .Input(fwd_arg)
                           .Input("Out@GRAD")
                           .Output("X@GRAD");
  if (reads == GradReads::kX) backward.Attr<bool>("approximate", false, "as the forward op's");
  backward.SetInferShape([fwd_arg](InferShapeContext* ctx) -> absl::Status {
    ASSIGN_OR_RETURN(TensorMeta in, ctx->Input(fwd_arg));
    RETURN_IF_ERROR(CheckFloating(ctx->op().type, fwd_arg, in.dtype));
    ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
    RETURN_IF_ERROR(
        CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, in.dtype, in.shape));
    ctx->SetOutput("X@GRAD", in);
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
  RegisterActivation("gelu",
                     "Out = X * Phi(X) = X / 2 * (1 + erf(X / sqrt(2))), Phi the standard normal "
                     "CDF; with approximate, the tanh form",
                     "X@GRAD = Out@GRAD * gelu'(X) (of the form attr approximate picks)",
                     GradReads::kX);
  return true;
}();

}  // namespace
}  // namespace tandem
