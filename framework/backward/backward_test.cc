// AppendBackward on programs of test ops registered here (framework/ links
// no real op schemas): which gradients exist, the ops appended in reverse
// order with their origins, partial gradients summed, and the errors.
#include "framework/backward/backward.h"

#include <string>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

absl::Status SameAsX(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  ctx->SetOutput("Out", x);
  return absl::OkStatus();
}

// A gradient op reading `reads` whose outputs "<in>@GRAD" have the meta of
// forward input <in> (bound as inputs of the same name).
absl::Status GradsLikeInputs(InferShapeContext* ctx) {
  for (const auto& [arg, vars] : ctx->op().outputs) {
    const std::string input = arg.substr(0, arg.size() - std::string(kGradSuffix).size());
    ASSIGN_OR_RETURN(TensorMeta meta, ctx->Input(input));
    ctx->SetOutput(arg, meta);
  }
  return absl::OkStatus();
}

// An op of `type` computing the gradients the context wants of the forward
// inputs `args`, from the gradient of its output "Out".
OpDesc GradOp(const std::string& type, const OpDesc& fwd, const GradContext& ctx,
              const std::vector<std::string>& args) {
  OpDesc g;
  g.type = type;
  for (const std::string& arg : args) {
    g.inputs[arg] = fwd.inputs.at(arg);
    if (ctx.Wants(fwd.Input(arg))) g.outputs[GradVarName(arg)] = {GradVarName(fwd.Input(arg))};
  }
  g.inputs[GradVarName("Out")] = {GradVarName(fwd.Output("Out"))};
  return g;
}

// Out = X · Y, [m, k] x [k, n].
REGISTER_OP("bw_matmul")
    .Input("X")
    .Input("Y")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(TensorMeta y, ctx->Input("Y"));
      ctx->SetOutput("Out", {x.dtype, Shape({x.shape.dim(0), y.shape.dim(1)})});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      return std::vector<OpDesc>{GradOp("bw_matmul_grad", fwd, ctx, {"X", "Y"})};
    });
REGISTER_OP("bw_matmul_grad")
    .Input("X")
    .Input("Y")
    .Input("Out@GRAD")
    .OptionalOutput("X@GRAD")
    .OptionalOutput("Y@GRAD")
    .SetInferShape(GradsLikeInputs);

// Out = mean(X), [1].
REGISTER_OP("bw_mean")
    .Input("X")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ctx->SetOutput("Out", {x.dtype, Shape({1})});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      return std::vector<OpDesc>{GradOp("bw_mean_grad", fwd, ctx, {"X"})};
    });
REGISTER_OP("bw_mean_grad")
    .Input("X")
    .Input("Out@GRAD")
    .OptionalOutput("X@GRAD")
    .SetInferShape(GradsLikeInputs);

// Out = 2 X; its gradient is itself, on the output's gradient.
REGISTER_OP("bw_double")
    .Input("X")
    .Output("Out")
    .SetInferShape(SameAsX)
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      OpDesc g;
      g.type = "bw_double";
      g.inputs["X"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["Out"] = {GradVarName(fwd.Input("X"))};
      return std::vector<OpDesc>{g};
    });

// Out = X + Y.
REGISTER_OP("bw_add").Input("X").Input("Y").Output("Out").SetInferShape(SameAsX).SetGradMaker(
    [](const OpDesc& fwd, const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      return std::vector<OpDesc>{GradOp("bw_add_grad", fwd, ctx, {"X", "Y"})};
    });
REGISTER_OP("bw_add_grad")
    .Input("X")
    .Input("Y")
    .Input("Out@GRAD")
    .OptionalOutput("X@GRAD")
    .OptionalOutput("Y@GRAD")
    .SetInferShape(GradsLikeInputs);

// Out = rows Ids of W; its gradient of W is sparse (SelectedRows).
REGISTER_OP("bw_lookup")
    .Input("W")
    .Input("Ids")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta w, ctx->Input("W"));
      ASSIGN_OR_RETURN(TensorMeta ids, ctx->Input("Ids"));
      ctx->SetOutput("Out", {w.dtype, Shape({ids.shape.dim(0), w.shape.dim(1)})});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      return std::vector<OpDesc>{GradOp("bw_lookup_grad", fwd, ctx, {"W", "Ids"})};
    });
REGISTER_OP("bw_lookup_grad")
    .Input("W")
    .Input("Ids")
    .Input("Out@GRAD")
    .OptionalOutput("W@GRAD")
    .OptionalOutput("Ids@GRAD")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta w, ctx->Input("W"));
      w.selected_rows = true;
      ctx->SetOutput("W@GRAD", w);
      return absl::OkStatus();
    });

// No gradient maker.
REGISTER_OP("bw_round").Input("X").Output("Out").SetInferShape(SameAsX);

Var Op(ProgramBuilder* b, const std::string& type, std::map<std::string, std::vector<Var>> in) {
  auto out = b->AppendOp(type, in, {}, {"Out"});
  return out.empty() ? Var{} : out["Out"][0];
}

std::vector<std::string> Types(const Program& p) {
  std::vector<std::string> types;
  for (const OpDesc& op : p.block().ops()) types.push_back(op.type);
  return types;
}

TEST(AppendBackward, GradientsOfTheParametersOnTheLossPathInReverseOrder) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({4, 3}));
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({3, 2}));
  Var unused = b.CreateParameter("unused", DataType::kFloat32, Shape({3, 2}));
  Var loss;
  {
    auto policy = b.transfer_policy(TransferPolicy::kDisallow);
    Var h = Op(&b, "bw_matmul", {{"X", {x}}, {"Y", {w}}});
    Op(&b, "bw_matmul", {{"X", {x}}, {"Y", {unused}}});  // not on the path to the loss
    loss = Op(&b, "bw_mean", {{"X", {h}}});
  }
  ASSERT_OK(b.status());

  ASSERT_OK_AND_ASSIGN(GradMap grads, AppendBackward(&b, loss));
  EXPECT_THAT(grads, ElementsAre(Pair("w", "w@GRAD")));
  const Block& block = b.main_program().block();
  ASSERT_EQ(Types(b.main_program()),
            (std::vector<std::string>{"bw_matmul", "bw_matmul", "bw_mean", "fill_constant",
                                      "bw_mean_grad", "bw_matmul_grad"}));
  // d loss / d loss = 1, shaped like the loss, placed with the op making it.
  const OpDesc& fill = block.ops()[3];
  EXPECT_EQ(fill.Output("Out"), "bw_mean_0.tmp_0@GRAD");
  EXPECT_EQ(std::get<std::vector<int64_t>>(fill.attrs.at("shape")), (std::vector<int64_t>{1}));
  EXPECT_EQ(std::get<double>(fill.attrs.at("value")), 1.0);
  EXPECT_EQ(fill.role, OpRole::kLoss);
  EXPECT_EQ(fill.origin, (OpOrigin{OpOrigin::Kind::kLossGradOf, 2, ""}));
  // Each gradient op records its forward op and keeps its transfer policy.
  const OpDesc& mean_grad = block.ops()[4];
  EXPECT_EQ(mean_grad.origin, (OpOrigin{OpOrigin::Kind::kGradOf, 2, ""}));
  EXPECT_EQ(mean_grad.role, OpRole::kBackward);
  EXPECT_EQ(mean_grad.transfer_policy, TransferPolicy::kDisallow);
  const OpDesc& matmul_grad = block.ops()[5];
  EXPECT_EQ(matmul_grad.origin, (OpOrigin{OpOrigin::Kind::kGradOf, 0, ""}));
  // x is fed (stop_gradient): only w's gradient is asked for.
  EXPECT_THAT(matmul_grad.outputs, ElementsAre(Pair("Y@GRAD", ElementsAre("w@GRAD"))));
  // Gradient variables are declared with their op's inferred shapes.
  const VarDesc* w_grad = block.FindVar("w@GRAD");
  ASSERT_NE(w_grad, nullptr);
  EXPECT_EQ(w_grad->shape, Shape({3, 2}));
  EXPECT_EQ(block.FindVar("bw_matmul_0.tmp_0@GRAD")->shape, Shape({4, 2}));
  EXPECT_FALSE(block.HasVar("unused@GRAD"));
  EXPECT_FALSE(block.HasVar("x@GRAD"));
}

TEST(AppendBackward, StopGradientParameterGetsNoGradient) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({4, 3}));
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({3, 3}));
  Var frozen = b.CreateParameter("frozen", DataType::kFloat32, Shape({3, 2}));
  b.main_program().block().FindVar("frozen")->stop_gradient = true;
  Var h = Op(&b, "bw_matmul", {{"X", {x}}, {"Y", {w}}});
  Var loss = Op(&b, "bw_mean", {{"X", {Op(&b, "bw_matmul", {{"X", {h}}, {"Y", {frozen}}})}}});
  ASSERT_OK_AND_ASSIGN(GradMap grads, AppendBackward(&b, loss));
  EXPECT_THAT(grads, ElementsAre(Pair("w", "w@GRAD")));
  // The second matmul passes the gradient on to h only.
  const OpDesc& second = b.main_program().block().ops()[5];
  ASSERT_EQ(second.type, "bw_matmul_grad");
  EXPECT_THAT(second.outputs, ElementsAre(Pair("X@GRAD", ElementsAre("bw_matmul_0.tmp_0@GRAD"))));
}

TEST(AppendBackward, PartialGradientsOfAVariableReadTwiceAreSummed) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({4, 3}));
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({3, 3}));
  Var h = Op(&b, "bw_matmul", {{"X", {x}}, {"Y", {w}}});  // #0
  Var p = Op(&b, "bw_double", {{"X", {h}}});              // #1
  Var q = Op(&b, "bw_double", {{"X", {h}}});              // #2
  Var loss = Op(&b, "bw_mean", {{"X", {Op(&b, "bw_add", {{"X", {p}}, {"Y", {q}}})}}});
  ASSERT_OK_AND_ASSIGN(GradMap grads, AppendBackward(&b, loss));
  EXPECT_THAT(grads, ElementsAre(Pair("w", "w@GRAD")));

  const std::vector<OpDesc>& ops = b.main_program().block().ops();
  ASSERT_EQ(Types(b.main_program()),
            (std::vector<std::string>{"bw_matmul", "bw_double", "bw_double", "bw_add", "bw_mean",
                                      "fill_constant", "bw_mean_grad", "bw_add_grad", "bw_double",
                                      "bw_double", "elementwise_add", "bw_matmul_grad"}));
  const std::string h_grad = GradVarName(h.name);
  // q's gradient op (#2, visited first) writes h@GRAD; p's writes a
  // renamed partial, added into h@GRAD right after it.
  EXPECT_EQ(ops[8].origin, (OpOrigin{OpOrigin::Kind::kGradOf, 2, ""}));
  EXPECT_EQ(ops[8].Output("Out"), h_grad);
  EXPECT_EQ(ops[9].origin, (OpOrigin{OpOrigin::Kind::kGradOf, 1, ""}));
  EXPECT_EQ(ops[9].Output("Out"), h_grad + "@RENAME@0");
  const OpDesc& sum = ops[10];
  ASSERT_EQ(sum.type, "elementwise_add");
  EXPECT_EQ(sum.Input("X"), h_grad);
  EXPECT_EQ(sum.Input("Y"), h_grad + "@RENAME@0");
  EXPECT_EQ(sum.Output("Out"), h_grad);
  EXPECT_EQ(sum.origin, (OpOrigin{OpOrigin::Kind::kGradSumOf, -1, h_grad + "@RENAME@0"}));
  EXPECT_EQ(sum.role, OpRole::kBackward);
  // h's gradient reaches matmul's only once complete.
  EXPECT_EQ(ops[11].Input("Out@GRAD"), h_grad);
}

TEST(AppendBackward, SeveralSparseContributionsAreUnimplemented) {
  ProgramBuilder b;
  Var ids = b.Data("ids", DataType::kInt64, Shape({5, 1}));
  Var table = b.CreateParameter("table", DataType::kFloat32, Shape({100, 8}));
  Var a = Op(&b, "bw_lookup", {{"W", {table}}, {"Ids", {ids}}});
  Var c = Op(&b, "bw_lookup", {{"W", {table}}, {"Ids", {ids}}});
  Var loss = Op(&b, "bw_mean", {{"X", {Op(&b, "bw_add", {{"X", {a}}, {"Y", {c}}})}}});
  EXPECT_THAT(AppendBackward(&b, loss).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("'table@GRAD' has several sparse gradient contributions")));
}

TEST(AppendBackward, OneSparseContributionIsDeclaredSelectedRows) {
  ProgramBuilder b;
  Var ids = b.Data("ids", DataType::kInt64, Shape({5, 1}));
  Var table = b.CreateParameter("table", DataType::kFloat32, Shape({100, 8}));
  Var loss = Op(&b, "bw_mean", {{"X", {Op(&b, "bw_lookup", {{"W", {table}}, {"Ids", {ids}}})}}});
  ASSERT_OK_AND_ASSIGN(GradMap grads, AppendBackward(&b, loss));
  EXPECT_THAT(grads, ElementsAre(Pair("table", "table@GRAD")));
  const VarDesc* g = b.main_program().block().FindVar("table@GRAD");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->kind, VarKind::kSelectedRows);
  EXPECT_EQ(g->shape, Shape({100, 8}));
}

TEST(AppendBackward, OpWithoutGradientOnThePathIsNotFound) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({4, 3}));
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({3, 3}));
  Var r = Op(&b, "bw_round", {{"X", {Op(&b, "bw_matmul", {{"X", {x}}, {"Y", {w}}})}}});
  Var loss = Op(&b, "bw_mean", {{"X", {r}}});
  EXPECT_THAT(AppendBackward(&b, loss).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("op 'bw_round' (#1) has no gradient, but its inputs "
                                 "bw_matmul_0.tmp_0... need one")));
}

TEST(AppendBackward, BadLossesAndBuilderErrorsAreRefused) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({4, 3}));
  Var fed_loss = Op(&b, "bw_mean", {{"X", {x}}});  // no parameter reaches it
  EXPECT_THAT(AppendBackward(&b, fed_loss).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no trainable parameter reaches the loss 'bw_mean_0.tmp_0'")));
  EXPECT_THAT(AppendBackward(&b, Var{"nope"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown loss 'nope'")));
  EXPECT_THAT(AppendBackward(&b, x).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                                       HasSubstr("no op produces the loss 'x'")));
  EXPECT_EQ(b.main_program().block().ops().size(), 1u);  // nothing appended

  Op(&b, "no_such_op", {{"X", {x}}});
  EXPECT_THAT(AppendBackward(&b, fed_loss).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("AppendBackward: the program has an error")));
}

}  // namespace
}  // namespace tandem
