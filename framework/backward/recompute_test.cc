// ApplyRecompute on hand-built training programs: which forward values the
// backward reads again, where the copies go, what is never recomputed, and
// the errors. (Bit-for-bit training results and the memory saved are
// tested on real ops: tests/training/gpt_training_test.cc and
// tests/runtime/differential_test.cc.)
#include "framework/backward/recompute.h"

#include <string>
#include <vector>

#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

OpDesc Op(const std::string& type, OpRole role,
          std::map<std::string, std::vector<std::string>> inputs,
          std::map<std::string, std::vector<std::string>> outputs) {
  OpDesc op;
  op.type = type;
  op.role = role;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  return op;
}

void Declare(Program* p, const std::string& name, bool persistable = false) {
  VarDesc v;
  v.name = name;
  v.dtype = DataType::kFloat32;
  v.shape = Shape({4, 8});
  v.persistable = persistable;
  p->block().SetVar(v);
}

// x -> fc(w1) -> h -> gelu -> a -> fc(w2) -> y -> mean -> loss, its backward
// and an sgd of w2.
Program Mlp() {
  Program p;
  for (const char* v : {"x", "h", "a", "y", "loss", "y@GRAD", "a@GRAD", "h@GRAD", "w1@GRAD",
                        "w2@GRAD", "loss@GRAD"}) {
    Declare(&p, v);
  }
  Declare(&p, "w1", true);
  Declare(&p, "w2", true);
  Block& b = p.block();
  b.AppendOp(Op("fc", OpRole::kForward, {{"Input", {"x"}}, {"W", {"w1"}}}, {{"Out", {"h"}}}));
  b.AppendOp(Op("gelu", OpRole::kForward, {{"X", {"h"}}}, {{"Out", {"a"}}}));
  b.AppendOp(Op("fc", OpRole::kForward, {{"Input", {"a"}}, {"W", {"w2"}}}, {{"Out", {"y"}}}));
  b.AppendOp(Op("mean", OpRole::kLoss, {{"X", {"y"}}}, {{"Out", {"loss"}}}));
  b.AppendOp(Op("fill_constant", OpRole::kBackward, {}, {{"Out", {"loss@GRAD"}}}));
  b.AppendOp(Op("mean_grad", OpRole::kBackward, {{"X", {"y"}}, {"Out@GRAD", {"loss@GRAD"}}},
                {{"X@GRAD", {"y@GRAD"}}}));
  b.AppendOp(Op("fc_grad", OpRole::kBackward,
                {{"Input", {"a"}}, {"W", {"w2"}}, {"Out@GRAD", {"y@GRAD"}}},
                {{"Input@GRAD", {"a@GRAD"}}, {"W@GRAD", {"w2@GRAD"}}}));
  b.AppendOp(Op("gelu_grad", OpRole::kBackward, {{"X", {"h"}}, {"Out@GRAD", {"a@GRAD"}}},
                {{"X@GRAD", {"h@GRAD"}}}));
  b.AppendOp(Op("fc_grad", OpRole::kBackward,
                {{"Input", {"x"}}, {"W", {"w1"}}, {"Out@GRAD", {"h@GRAD"}}},
                {{"W@GRAD", {"w1@GRAD"}}}));
  b.AppendOp(Op("sgd", OpRole::kOptimize, {{"Param", {"w2"}}, {"Grad", {"w2@GRAD"}}},
                {{"ParamOut", {"w2"}}}));
  return p;
}

TEST(Recompute, TheBackwardReadsTheGeluOutputMadeAgainFromTheKeptInput) {
  Program p = Mlp();
  p.block().mutable_ops()[6].origin = {OpOrigin::Kind::kGradOf, 2, ""};
  ASSERT_OK_AND_ASSIGN(RecomputeReport r, ApplyRecompute({}, &p));
  EXPECT_THAT(r.values, ElementsAre("a (gelu #1)"));
  EXPECT_EQ(r.ops, 1);
  const std::vector<OpDesc>& ops = p.block().ops();
  ASSERT_EQ(ops.size(), 11u);
  // The copy sits right before the first backward reader of `a`.
  const OpDesc& copy = ops[6];
  EXPECT_EQ(copy.type, "gelu");
  EXPECT_EQ(copy.role, OpRole::kBackward);
  EXPECT_EQ(copy.origin, (OpOrigin{OpOrigin::Kind::kRecomputeOf, 1, ""}));
  EXPECT_EQ(copy.Input("X"), "h");
  EXPECT_EQ(copy.Output("Out"), "a@RECOMPUTE");
  EXPECT_EQ(ops[7].type, "fc_grad");
  EXPECT_EQ(ops[7].Input("Input"), "a@RECOMPUTE");
  EXPECT_EQ(ops[7].origin.op, 2);         // a forward op's index does not move
  EXPECT_EQ(ops[8].Input("X"), "h");      // fc is not listed: h is kept
  EXPECT_EQ(ops[2].Input("Input"), "a");  // the forward reads the original
  const VarDesc* twin = p.block().FindVar("a@RECOMPUTE");
  ASSERT_NE(twin, nullptr);
  EXPECT_FALSE(twin->persistable);
  EXPECT_EQ(twin->shape, Shape({4, 8}));
}

// y = layer_norm(x), y16 = cast(y), read by fc_grad: the cast is made
// again from a layer_norm made again from x, which layer_norm_grad keeps.
TEST(Recompute, ACastOfALayerNormIsMadeAgainFromTheLayerNormsInput) {
  Program p;
  for (const char* v :
       {"x", "y", "m", "var", "y16", "out", "out@GRAD", "y16@GRAD", "y@GRAD", "x@GRAD"}) {
    Declare(&p, v);
  }
  Declare(&p, "w16", true);
  Block& b = p.block();
  b.AppendOp(Op("layer_norm", OpRole::kForward, {{"X", {"x"}}},
                {{"Y", {"y"}}, {"Mean", {"m"}}, {"Variance", {"var"}}}));
  b.AppendOp(Op("cast", OpRole::kForward, {{"X", {"y"}}}, {{"Out", {"y16"}}}));
  b.AppendOp(Op("fc", OpRole::kLoss, {{"Input", {"y16"}}, {"W", {"w16"}}}, {{"Out", {"out"}}}));
  b.AppendOp(Op("fc_grad", OpRole::kBackward,
                {{"Input", {"y16"}}, {"W", {"w16"}}, {"Out@GRAD", {"out@GRAD"}}},
                {{"Input@GRAD", {"y16@GRAD"}}}));
  b.AppendOp(Op("cast", OpRole::kBackward, {{"X", {"y16@GRAD"}}}, {{"Out", {"y@GRAD"}}}));
  b.AppendOp(Op("layer_norm_grad", OpRole::kBackward,
                {{"X", {"x"}}, {"Mean", {"m"}}, {"Variance", {"var"}}, {"Y@GRAD", {"y@GRAD"}}},
                {{"X@GRAD", {"x@GRAD"}}}));
  ASSERT_OK_AND_ASSIGN(RecomputeReport r, ApplyRecompute({}, &p));
  EXPECT_EQ(r.ops, 2);
  const std::vector<OpDesc>& ops = p.block().ops();
  ASSERT_EQ(ops.size(), 8u);
  EXPECT_EQ(ops[3].type, "layer_norm");
  EXPECT_EQ(ops[3].Input("X"), "x");
  EXPECT_EQ(ops[3].Output("Y"), "y@RECOMPUTE");
  EXPECT_EQ(ops[3].origin.op, 0);
  EXPECT_EQ(ops[4].type, "cast");
  EXPECT_EQ(ops[4].Input("X"), "y@RECOMPUTE");
  EXPECT_EQ(ops[4].origin.op, 1);
  EXPECT_EQ(ops[5].Input("Input"), "y16@RECOMPUTE");
  // layer_norm_grad reads x as before; its statistics come from the copy.
  EXPECT_EQ(ops[7].Input("X"), "x");
  EXPECT_EQ(ops[7].Input("Mean"), "m@RECOMPUTE");
  EXPECT_THAT(r.values, ElementsAre("y16 (cast #1)", "m (layer_norm #0)", "var (layer_norm #0)"));
}

// w16 = cast(w), w persistable: kept unless parameter casts are asked for.
TEST(Recompute, ParameterCastsOnlyWhenAskedFor) {
  auto build = [] {
    Program p;
    for (const char* v : {"x", "w16", "out", "out@GRAD", "x@GRAD"}) Declare(&p, v);
    Declare(&p, "w", true);
    Block& b = p.block();
    b.AppendOp(Op("cast", OpRole::kForward, {{"X", {"w"}}}, {{"Out", {"w16"}}}));
    b.AppendOp(Op("fc", OpRole::kLoss, {{"Input", {"x"}}, {"W", {"w16"}}}, {{"Out", {"out"}}}));
    b.AppendOp(Op("fc_grad", OpRole::kBackward,
                  {{"Input", {"x"}}, {"W", {"w16"}}, {"Out@GRAD", {"out@GRAD"}}},
                  {{"Input@GRAD", {"x@GRAD"}}}));
    return p;
  };
  Program kept = build();
  ASSERT_OK_AND_ASSIGN(RecomputeReport none, ApplyRecompute({}, &kept));
  EXPECT_THAT(none.values, IsEmpty());
  EXPECT_EQ(kept.block().ops().size(), 3u);
  Program again = build();
  RecomputeOptions options;
  options.parameter_casts = true;
  ASSERT_OK_AND_ASSIGN(RecomputeReport cast, ApplyRecompute(options, &again));
  EXPECT_THAT(cast.values, ElementsAre("w16 (cast #0)"));
  EXPECT_EQ(again.block().ops()[3].Input("W"), "w16@RECOMPUTE");
}

// Never recomputed: a value whose input nothing else keeps (it would have
// to be kept instead), a value written twice, a value an update reads.
TEST(Recompute, NothingNewIsKeptAndNothingWrittenTwiceOrReadByAnUpdateIsRecomputed) {
  {
    Program p = Mlp();
    p.block().mutable_ops()[7].inputs["X"] = {"a"};  // gelu_grad no longer reads h
    ASSERT_OK_AND_ASSIGN(RecomputeReport r, ApplyRecompute({}, &p));
    EXPECT_THAT(r.values, IsEmpty());
  }
  {
    Program p = Mlp();
    p.block().InsertOp(2, Op("relu", OpRole::kForward, {{"X", {"h"}}}, {{"Out", {"a"}}}));
    ASSERT_OK_AND_ASSIGN(RecomputeReport r, ApplyRecompute({}, &p));
    EXPECT_THAT(r.values, IsEmpty());
  }
  {
    Program p = Mlp();
    p.block().AppendOp(
        Op("sgd", OpRole::kOptimize, {{"Param", {"w1"}}, {"Grad", {"a"}}}, {{"ParamOut", {"w1"}}}));
    ASSERT_OK_AND_ASSIGN(RecomputeReport r, ApplyRecompute({}, &p));
    EXPECT_THAT(r.values, IsEmpty());
  }
}

TEST(Recompute, ErrorsNameWhatIsWrong) {
  Program forward_only = Mlp();
  forward_only.block().mutable_ops().resize(4);
  EXPECT_THAT(ApplyRecompute({}, &forward_only),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no backward op")));
  Program p = Mlp();
  RecomputeOptions random;
  random.ops = {"gelu", "dropout"};
  EXPECT_THAT(ApplyRecompute(random, &p), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr("'dropout' draws random numbers")));
  EXPECT_EQ(p.block().ops().size(), 10u);  // unchanged
  EXPECT_THAT(ParseRecomputeFlag("all"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown value 'all'; accepted: none, cheap, cheap+weights")));
  ASSERT_OK_AND_ASSIGN(std::optional<RecomputeOptions> none, ParseRecomputeFlag("none"));
  EXPECT_FALSE(none.has_value());
  ASSERT_OK_AND_ASSIGN(std::optional<RecomputeOptions> cheap, ParseRecomputeFlag("cheap"));
  ASSERT_TRUE(cheap.has_value());
  EXPECT_EQ(cheap->ops, DefaultRecomputeOps());
  EXPECT_FALSE(cheap->parameter_casts);
  ASSERT_OK_AND_ASSIGN(std::optional<RecomputeOptions> weights,
                       ParseRecomputeFlag("cheap+weights"));
  ASSERT_TRUE(weights.has_value());
  EXPECT_TRUE(weights->parameter_casts);
}

}  // namespace
}  // namespace tandem
