// The broadcasting binary ops elementwise_add, elementwise_sub,
// elementwise_mul and elementwise_div, and their gradient ops.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

absl::Status CheckSameDtype(InferShapeContext* ctx, const TensorMeta& x,
                            const TensorMeta& y) {
  if (x.dtype != y.dtype) {
    return ctx->Error(absl::StrCat("X is ", DataTypeName(x.dtype), " but Y is ",
                                   DataTypeName(y.dtype), "; cast one of them"));
  }
  if (x.dtype == DataType::kBool) return ctx->Error("X and Y must be numeric, got bool");
  return absl::OkStatus();
}

// Out's meta: X and Y validated and broadcast by attr axis.
absl::StatusOr<TensorMeta> InferOut(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
  RETURN_IF_ERROR(CheckSameDtype(ctx, x, y));
  ASSIGN_OR_RETURN(int64_t axis, ctx->Attr<int64_t>("axis"));
  ASSIGN_OR_RETURN(Shape out, BroadcastShapes(ctx->op().type, x.shape, y.shape, axis));
  return TensorMeta{x.dtype, out};
}

constexpr char kBroadcastDoc[] =
    " with numpy broadcasting; axis >= 0 aligns Y's dims with X's dims starting at axis. "
    "float32, float64, int32, int64; integers wrap around on overflow.";

// Registers `type` (Out = X <op> Y) and `type`_grad. The gradient op reads
// X, Y and Out@GRAD, and Out too when `grad_reads_out`; it accepts
// integers unless `float_grad`.
void RegisterBinary(const std::string& type, const std::string& doc, const std::string& grad_doc,
                    bool grad_reads_out, bool float_grad) {
  OpRegistry::Global()
      .Register(type)
      .Doc(doc + kBroadcastDoc)
      .Input("X")
      .Input("Y")
      .Output("Out")
      .Attr<int64_t>("axis", -1)
      .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
        ASSIGN_OR_RETURN(TensorMeta out, InferOut(ctx));
        ctx->SetOutput("Out", out);
        return absl::OkStatus();
      })
      .SetGradMaker(
          [type, grad_reads_out](const OpDesc& fwd,
                                 const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
            OpDesc g;
            g.type = type + "_grad";
            g.inputs["X"] = {fwd.Input("X")};
            g.inputs["Y"] = {fwd.Input("Y")};
            if (grad_reads_out) g.inputs["Out"] = {fwd.Output("Out")};
            g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
            if (ctx.Wants(fwd.Input("X"))) g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
            if (ctx.Wants(fwd.Input("Y"))) g.outputs["Y@GRAD"] = {GradVarName(fwd.Input("Y"))};
            if (g.outputs.empty()) return std::vector<OpDesc>{};
            g.attrs["axis"] = fwd.attrs.at("axis");
            return std::vector<OpDesc>{g};
          });

  OpSchema& grad = OpRegistry::Global().Register(type + "_grad");
  grad.Doc(grad_doc).Input("X").Input("Y");
  if (grad_reads_out) grad.Input("Out");
  grad.Input("Out@GRAD")
      .OptionalOutput("X@GRAD")
      .OptionalOutput("Y@GRAD")
      .Attr<int64_t>("axis", -1)
      .SetInferShape([grad_reads_out, float_grad](InferShapeContext* ctx) -> absl::Status {
        ASSIGN_OR_RETURN(TensorMeta out, InferOut(ctx));
        if (float_grad) RETURN_IF_ERROR(CheckFloating(ctx->op().type, "X", out.dtype));
        ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
        ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
        std::vector<std::string> same_as_out = {"Out@GRAD"};
        if (grad_reads_out) same_as_out.push_back("Out");
        for (const std::string& arg : same_as_out) {
          ASSIGN_OR_RETURN(TensorMeta m, ctx->Input(arg));
          RETURN_IF_ERROR(
              CheckArgMeta(ctx->op().type, arg, m.dtype, m.shape, out.dtype, out.shape));
        }
        ctx->SetOutput("X@GRAD", x);
        ctx->SetOutput("Y@GRAD", y);
        return absl::OkStatus();
      });
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterBinary("elementwise_add", "Out = X + Y",
                 "X@GRAD / Y@GRAD: Out@GRAD summed over the dims X / Y were broadcast on.",
                 /*grad_reads_out=*/false, /*float_grad=*/false);
  RegisterBinary("elementwise_sub", "Out = X - Y",
                 "X@GRAD = Out@GRAD and Y@GRAD = -Out@GRAD, each summed over the dims its "
                 "input was broadcast on.",
                 /*grad_reads_out=*/false, /*float_grad=*/false);
  RegisterBinary("elementwise_mul", "Out = X * Y",
                 "X@GRAD = Out@GRAD * Y and Y@GRAD = Out@GRAD * X, each summed over the dims its "
                 "input was broadcast on.",
                 /*grad_reads_out=*/false, /*float_grad=*/false);
  RegisterBinary("elementwise_div",
                 "Out = X / Y; integer division truncates toward zero and a zero divisor is "
                 "InvalidArgument naming its position in Y",
                 "X@GRAD = Out@GRAD / Y and Y@GRAD = -Out@GRAD * Out / Y, each summed over the "
                 "dims its input was broadcast on; float32 and float64 only.",
                 /*grad_reads_out=*/true, /*float_grad=*/true);
  return true;
}();

}  // namespace
}  // namespace tandem
