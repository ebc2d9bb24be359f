// slice: Out = Input[starts:ends] along `axes` (numpy semantics), and its
// gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/array/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// Input's meta and the sliced region, after validating dtype and attrs.
absl::StatusOr<Box> InferBox(InferShapeContext* ctx, TensorMeta* input_out) {
  ASSIGN_OR_RETURN(TensorMeta input, ctx->Input("Input"));
  if (input.dtype == DataType::kBool) return ctx->Error("Input must be numeric, got bool");
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx->Attr<std::vector<int64_t>>("axes"));
  ASSIGN_OR_RETURN(std::vector<int64_t> starts, ctx->Attr<std::vector<int64_t>>("starts"));
  ASSIGN_OR_RETURN(std::vector<int64_t> ends, ctx->Attr<std::vector<int64_t>>("ends"));
  *input_out = input;
  return SliceBox(ctx->op().type, input.shape, axes, starts, ends);
}

REGISTER_OP("slice")
    .Doc(
        "Out = Input[starts[i]:ends[i]] along axes[i], numpy style: negative "
        "starts/ends add the dim's size, then clamp to [0, dim]; end <= start "
        "gives an empty dim. Out has Input's rank.")
    .Input("Input")
    .Output("Out")
    .RequiredAttr("axes", AttrType::kInts, "dims to slice; negative counts from the end")
    .RequiredAttr("starts", AttrType::kInts)
    .RequiredAttr("ends", AttrType::kInts)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta input;
      ASSIGN_OR_RETURN(Box box, InferBox(ctx, &input));
      ctx->SetOutput("Out", TensorMeta{input.dtype, box.shape});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("Input"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "slice_grad";
      g.inputs["Input"] = {fwd.Input("Input")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["Input@GRAD"] = {GradVarName(fwd.Input("Input"))};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("slice_grad")
    .Doc("Input@GRAD: zeros of Input's shape with the sliced region = Out@GRAD.")
    .Input("Input")
    .Input("Out@GRAD")
    .Output("Input@GRAD")
    .RequiredAttr("axes", AttrType::kInts)
    .RequiredAttr("starts", AttrType::kInts)
    .RequiredAttr("ends", AttrType::kInts)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta input;
      ASSIGN_OR_RETURN(Box box, InferBox(ctx, &input));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, input.dtype, box.shape));
      ctx->SetOutput("Input@GRAD", input);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
