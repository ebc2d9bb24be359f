// concat: Out = the X list joined along an axis, and its gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/array/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// The geometry of the X list after checking that every X has X[0]'s dtype.
absl::StatusOr<AxisPieces> InferConcat(InferShapeContext* ctx, DataType* dtype) {
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx->InputCount("X"); ++i) {
    ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X", i));
    if (i == 0) *dtype = x.dtype;
    if (x.dtype != *dtype) {
      return ctx->Error(absl::StrCat("X[", i, "] is ", DataTypeName(x.dtype), " but X[0] is ",
                                     DataTypeName(*dtype)));
    }
    shapes.push_back(x.shape);
  }
  ASSIGN_OR_RETURN(int64_t axis, ctx->Attr<int64_t>("axis"));
  return ConcatGeometry(ctx->op().type, shapes, axis);
}

REGISTER_OP("concat")
    .Doc(
        "Out = the tensors of X (one or more, same dtype and rank, equal dims "
        "except along axis) joined along axis, in order; negative axis counts "
        "from the end. float32, float64, int32, int64.")
    .DuplicableInput("X")
    .Output("Out")
    .Attr<int64_t>("axis", 0)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      DataType dtype;
      ASSIGN_OR_RETURN(AxisPieces p, InferConcat(ctx, &dtype));
      ctx->SetOutput("Out", TensorMeta{dtype, p.whole});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      const std::vector<std::string>& xs = fwd.inputs.at("X");
      OpDesc g;
      g.type = "concat_grad";
      g.inputs["X"] = xs;
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      std::vector<int64_t> positions;
      for (size_t i = 0; i < xs.size(); ++i) {
        if (!ctx.Wants(xs[i])) continue;
        positions.push_back(static_cast<int64_t>(i));
        g.outputs["X@GRAD"].push_back(GradVarName(xs[i]));
      }
      if (positions.empty()) return std::vector<OpDesc>{};
      if (positions.size() == xs.size()) positions.clear();  // all
      g.attrs["axis"] = fwd.attrs.at("axis");
      g.attrs["grad_positions"] = positions;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("concat_grad")
    .Doc(
        "X@GRAD[j] = the part of Out@GRAD that X[grad_positions[j]] occupies "
        "(empty grad_positions: every X, in order). X is read for its shapes only.")
    .DuplicableInput("X")
    .Input("Out@GRAD")
    .DuplicableOutput("X@GRAD")
    .Attr<int64_t>("axis", 0)
    .Attr<std::vector<int64_t>>("grad_positions", {},
                                "the X whose gradients are bound, increasing; empty: all")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      DataType dtype;
      ASSIGN_OR_RETURN(AxisPieces p, InferConcat(ctx, &dtype));
      ASSIGN_OR_RETURN(TensorMeta dout, ctx->Input("Out@GRAD"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out@GRAD", dout.dtype, dout.shape, dtype, p.whole));
      ASSIGN_OR_RETURN(std::vector<int64_t> attr,
                       ctx->Attr<std::vector<int64_t>>("grad_positions"));
      ASSIGN_OR_RETURN(std::vector<int64_t> positions,
                       GradPositions(ctx->op().type, attr, ctx->InputCount("X")));
      const size_t bound = BoundCount(ctx->op(), "X@GRAD");
      if (bound != positions.size()) {
        return ctx->Error(absl::StrCat("X@GRAD has ", bound, " variables but grad_positions names ",
                                       positions.size(), " X"));
      }
      for (size_t j = 0; j < positions.size(); ++j) {
        ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X", static_cast<int>(positions[j])));
        ctx->SetOutput("X@GRAD", x, static_cast<int>(j));
      }
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
