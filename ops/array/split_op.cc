// split: Out (a list) = X cut into pieces along an axis, and its gradient op.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/array/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// X's meta and the pieces the attrs cut it into.
absl::StatusOr<AxisPieces> InferSplit(InferShapeContext* ctx, TensorMeta* x_out) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  ASSIGN_OR_RETURN(int64_t axis, ctx->Attr<int64_t>("axis"));
  ASSIGN_OR_RETURN(int64_t num, ctx->Attr<int64_t>("num"));
  ASSIGN_OR_RETURN(std::vector<int64_t> sections, ctx->Attr<std::vector<int64_t>>("sections"));
  *x_out = x;
  return SplitGeometry(ctx->op().type, x.shape, axis, num, sections);
}

REGISTER_OP("split")
    .Doc(
        "Out[i] = the i-th piece of X along axis (negative counts from the end): "
        "num > 0 equal pieces, or pieces of the sizes in sections (num 0; one -1 "
        "takes the rest). Out binds one variable per piece. float32, float64, "
        "int32, int64.")
    .Input("X")
    .DuplicableOutput("Out")
    .Attr<int64_t>("axis", 0)
    .Attr<int64_t>("num", 0, "number of equal pieces; 0: use sections")
    .Attr<std::vector<int64_t>>("sections", {}, "piece sizes; one may be -1")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(AxisPieces p, InferSplit(ctx, &x));
      const size_t bound = BoundCount(ctx->op(), "Out");
      if (bound != p.sizes.size()) {
        return ctx->Error(absl::StrCat("Out has ", bound, " variables but X ", x.shape.ToString(),
                                       " is split into ", p.sizes.size(), " pieces"));
      }
      for (size_t i = 0; i < p.sizes.size(); ++i) {
        ctx->SetOutput("Out", TensorMeta{x.dtype, PieceShape(p, static_cast<int>(i))},
                       static_cast<int>(i));
      }
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("X"))) return std::vector<OpDesc>{};
      const std::vector<std::string>& outs = fwd.outputs.at("Out");
      OpDesc g;
      g.type = "split_grad";
      g.inputs["X"] = {fwd.Input("X")};
      std::vector<int64_t> positions;
      for (size_t i = 0; i < outs.size(); ++i) {
        const std::string grad = GradVarName(outs[i]);
        if (!ctx.meta(grad).has_value()) continue;  // no gradient reaches this piece
        positions.push_back(static_cast<int64_t>(i));
        g.inputs["Out@GRAD"].push_back(grad);
      }
      if (positions.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "op 'split': no gradient of its outputs is known; cannot make split_grad for ",
            fwd.Input("X")));
      }
      if (positions.size() == outs.size()) positions.clear();  // all
      g.outputs["X@GRAD"] = {GradVarName(fwd.Input("X"))};
      for (const char* attr : {"axis", "num", "sections"}) g.attrs[attr] = fwd.attrs.at(attr);
      g.attrs["grad_positions"] = positions;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("split_grad")
    .Doc(
        "X@GRAD = the pieces joined along axis, where piece grad_positions[j] is "
        "Out@GRAD[j] and every other piece is zeros (empty grad_positions: every "
        "piece, in order). X is read for its shape only.")
    .Input("X")
    .DuplicableInput("Out@GRAD")
    .Output("X@GRAD")
    .Attr<int64_t>("axis", 0)
    .Attr<int64_t>("num", 0)
    .Attr<std::vector<int64_t>>("sections", {})
    .Attr<std::vector<int64_t>>("grad_positions", {},
                                "the pieces whose gradients are given, increasing; empty: all")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta x;
      ASSIGN_OR_RETURN(AxisPieces p, InferSplit(ctx, &x));
      ASSIGN_OR_RETURN(std::vector<int64_t> attr,
                       ctx->Attr<std::vector<int64_t>>("grad_positions"));
      ASSIGN_OR_RETURN(std::vector<int64_t> positions,
                       GradPositions(ctx->op().type, attr, static_cast<int64_t>(p.sizes.size())));
      if (ctx->InputCount("Out@GRAD") != static_cast<int>(positions.size())) {
        return ctx->Error(absl::StrCat("Out@GRAD has ", ctx->InputCount("Out@GRAD"),
                                       " variables but grad_positions names ", positions.size(),
                                       " pieces"));
      }
      for (size_t j = 0; j < positions.size(); ++j) {
        ASSIGN_OR_RETURN(TensorMeta d, ctx->Input("Out@GRAD", static_cast<int>(j)));
        RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, absl::StrCat("Out@GRAD[", j, "]"), d.dtype,
                                     d.shape, x.dtype,
                                     PieceShape(p, static_cast<int>(positions[j]))));
      }
      ctx->SetOutput("X@GRAD", x);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
