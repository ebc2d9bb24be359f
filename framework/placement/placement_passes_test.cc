// Each placement rule alone, on hand-made ops (no kernels or devices needed;
// tests/runtime/placement_test.cc runs them together through PlaceProgram).
#include "framework/placement/placement_passes.h"

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

const Place kDev(DeviceType::GPU(), 3);  // rules never check that it exists

OpDesc Op(const std::string& type, std::map<std::string, std::vector<std::string>> in,
          std::map<std::string, std::vector<std::string>> out, OpOrigin origin = {},
          std::string device = "") {
  OpDesc op;
  op.type = type;
  op.inputs = std::move(in);
  op.outputs = std::move(out);
  op.origin = std::move(origin);
  op.op_device = std::move(device);
  return op;
}

// A program of `ops`; the context has placed each op i < placed.size() on placed[i].
struct Fixture {
  Program program;
  PlacerOptions options;
  std::unique_ptr<PlacementContext> ctx;

  Fixture(std::vector<OpDesc> ops, const std::vector<Place>& placed) {
    options.default_place = kDev;
    for (OpDesc& op : ops) program.block().AppendOp(std::move(op));
    Reset(placed);
  }
  void Reset(const std::vector<Place>& placed) {
    ctx = std::make_unique<PlacementContext>(program, options);
    for (size_t i = 0; i < placed.size(); ++i) ctx->Record(op(i), static_cast<int>(i), placed[i]);
  }
  const OpDesc& op(size_t i) const { return program.block().ops()[i]; }
  absl::StatusOr<std::optional<PlaceDecision>> Apply(PlacementRule rule, int i) const {
    return rule(op(i), i, *ctx);
  }
};

TEST(PlacementRules, InOrderWithTheirCauseNames) {
  std::vector<std::string> names;
  for (const NamedPlacementRule& r : PlacementRules()) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cast-at-source", "guard", "inherit", "loss-grad",
                                             "grad-sum", "grad-norm", "param", "state",
                                             "host-state", "auto", "default"}));
  EXPECT_EQ(PlacementCauseName(PlacementCause::kWriteBack), "write-back");
  EXPECT_EQ(PlacementCauseName(PlacementCause::kHostArg), "host-arg");
}

TEST(GuardRule, PinsTheOpAndResolvesTheType) {
  Fixture f({Op("scale", {{"X", {"x"}}}, {{"Out", {"y"}}}, {}, "gpu"),
             Op("scale", {{"X", {"y"}}}, {{"Out", {"z"}}}, {OpOrigin::Kind::kGradOf, 0, ""}, "cpu"),
             Op("scale", {{"X", {"z"}}}, {{"Out", {"w"}}}),
             Op("scale", {{"X", {"z"}}}, {{"Out", {"w"}}}, {}, "tpu")},
            {});
  ASSERT_OK_AND_ASSIGN(std::optional<PlaceDecision> d, f.Apply(GuardRule, 0));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, kDev);  // "gpu": the default place's GPU
  EXPECT_EQ(d->cause, PlacementCause::kGuard);
  EXPECT_EQ(d->detail, "op_device \"gpu\"");
  // A generated op with an op_device is pinned as well.
  ASSERT_OK_AND_ASSIGN(d, f.Apply(GuardRule, 1));
  EXPECT_EQ(d->place, CPUPlace());
  ASSERT_OK_AND_ASSIGN(d, f.Apply(GuardRule, 2));
  EXPECT_FALSE(d.has_value());
  EXPECT_THAT(f.Apply(GuardRule, 3).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("op 'scale' (#3): ")));
}

TEST(InheritRule, GradientOpRunsWithItsForwardOp) {
  Fixture f(
      {Op("mul", {{"X", {"x"}}}, {{"Out", {"y"}}}),
       Op("mul_grad", {{"X", {"x"}}}, {{"X@GRAD", {"x@GRAD"}}}, {OpOrigin::Kind::kGradOf, 0, ""}),
       Op("mul_grad", {{"X", {"x"}}}, {{"X@GRAD", {"x@GRAD"}}}, {OpOrigin::Kind::kGradOf, 2, ""})},
      {CPUPlace()});
  ASSERT_OK_AND_ASSIGN(std::optional<PlaceDecision> d, f.Apply(InheritRule, 1));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, CPUPlace());
  EXPECT_EQ(d->cause, PlacementCause::kInherit);
  EXPECT_EQ(d->detail, "gradient of 'mul' (#0)");
  // Not an origin the rule reads: not its business.
  ASSERT_OK_AND_ASSIGN(d, f.Apply(InheritRule, 0));
  EXPECT_FALSE(d.has_value());
  // An origin that is not an earlier op (hand-written programs).
  EXPECT_THAT(f.Apply(InheritRule, 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'mul_grad' (#2) derives from op #2 (origin grad_of), which "
                                 "is not an earlier op")));
}

TEST(LossGradRule, FillGoesWithTheLoss) {
  Fixture f(
      {Op("mean", {{"X", {"c"}}}, {{"Out", {"loss"}}}),
       Op("fill_constant", {}, {{"Out", {"loss@GRAD"}}}, {OpOrigin::Kind::kLossGradOf, 0, ""})},
      {kDev});
  ASSERT_OK_AND_ASSIGN(std::optional<PlaceDecision> d, f.Apply(LossGradRule, 1));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, kDev);
  EXPECT_EQ(d->cause, PlacementCause::kLossGrad);
  EXPECT_EQ(d->detail, "with the loss op 'mean' (#0)");
}

TEST(GradSumRule, SumRunsWhereThePartialWasProduced) {
  Fixture f({Op("mul_grad", {}, {{"X@GRAD", {"h@GRAD@RENAME@0"}}}),
             Op("elementwise_add", {{"X", {"h@GRAD"}}, {"Y", {"h@GRAD@RENAME@0"}}},
                {{"Out", {"h@GRAD"}}}, {OpOrigin::Kind::kGradSumOf, -1, "h@GRAD@RENAME@0"}),
             Op("elementwise_add", {{"X", {"g"}}, {"Y", {"never"}}}, {{"Out", {"g"}}},
                {OpOrigin::Kind::kGradSumOf, -1, "never"})},
            {CPUPlace()});
  ASSERT_OK_AND_ASSIGN(std::optional<PlaceDecision> d, f.Apply(GradSumRule, 1));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, CPUPlace());
  EXPECT_EQ(d->cause, PlacementCause::kGradSum);
  EXPECT_EQ(d->detail, "where partial 'h@GRAD@RENAME@0' was produced (#0)");
  ASSERT_OK_AND_ASSIGN(d, f.Apply(GradSumRule, 2));  // no producer: later rules decide
  EXPECT_FALSE(d.has_value());
}

TEST(GradNormRule, NormRunsWhereTheGradientWasProduced) {
  Fixture f({Op("fc_grad", {}, {{"W@GRAD", {"w@GRAD"}}}),
             Op("squared_l2_norm", {{"X", {"w@GRAD"}}}, {{"Out", {"w@GRAD.squared_norm"}}},
                {OpOrigin::Kind::kGradNormOf, -1, "w@GRAD"}),
             Op("squared_l2_norm", {{"X", {"fed@GRAD"}}}, {{"Out", {"n"}}},
                {OpOrigin::Kind::kGradNormOf, -1, "fed@GRAD"})},
            {kDev});
  ASSERT_OK_AND_ASSIGN(std::optional<PlaceDecision> d, f.Apply(GradNormRule, 1));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, kDev);
  EXPECT_EQ(d->cause, PlacementCause::kGradNorm);
  EXPECT_EQ(d->detail, "where gradient 'w@GRAD' was produced (#0)");
  ASSERT_OK_AND_ASSIGN(d, f.Apply(GradNormRule, 2));  // no producer: later rules decide
  EXPECT_FALSE(d.has_value());
}

TEST(ParamRule, UpdateRunsWhereTheParameterIsFirstRead) {
  Fixture f(
      {Op("lookup_table", {{"W", {"emb_w"}}, {"Ids", {"ids"}}}, {{"Out", {"e"}}}),
       Op("scale", {{"X", {"emb_w"}}}, {{"Out", {"e2"}}}),
       Op("sgd", {{"Param", {"emb_w"}}}, {{"ParamOut", {"emb_w"}}},
          {OpOrigin::Kind::kUpdateOf, -1, "emb_w"}),
       Op("sgd", {{"Param", {"b"}}}, {{"ParamOut", {"b"}}}, {OpOrigin::Kind::kUpdateOf, -1, "b"}),
       Op("sgd", {{"Param", {"c"}}}, {{"ParamOut", {"c"}}}, {OpOrigin::Kind::kUpdateOf, -1, "c"})},
      {CPUPlace(), kDev});
  f.options.initial_places["b"] = kDev;
  f.Reset({CPUPlace(), kDev});
  ASSERT_OK_AND_ASSIGN(std::optional<PlaceDecision> d, f.Apply(ParamRule, 2));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, CPUPlace());  // the first reader, not the later one on the device
  EXPECT_EQ(d->cause, PlacementCause::kParam);
  EXPECT_EQ(d->detail, "where 'emb_w' is read ('lookup_table' #0)");
  ASSERT_OK_AND_ASSIGN(d, f.Apply(ParamRule, 3));  // no reader: where it lives
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, kDev);
  EXPECT_EQ(d->detail, "where 'b' lives");
  ASSERT_OK_AND_ASSIGN(d, f.Apply(ParamRule, 4));  // neither: later rules decide
  EXPECT_FALSE(d.has_value());
}

TEST(StateRule, StateIsInitialisedWithItsParameter) {
  Fixture f(
      {Op("uniform_random", {}, {{"Out", {"w"}}}),
       Op("fill_constant", {}, {{"Out", {"w_velocity_0"}}}, {OpOrigin::Kind::kStateOf, -1, "w"}),
       Op("fill_constant", {}, {{"Out", {"v_velocity_0"}}}, {OpOrigin::Kind::kStateOf, -1, "v"})},
      {});
  f.options.initial_places["v"] = CPUPlace();
  f.Reset({kDev});
  ASSERT_OK_AND_ASSIGN(std::optional<PlaceDecision> d, f.Apply(StateRule, 1));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, kDev);
  EXPECT_EQ(d->cause, PlacementCause::kState);
  EXPECT_EQ(d->detail, "with 'w', initialised by #0");
  ASSERT_OK_AND_ASSIGN(d, f.Apply(StateRule, 2));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, CPUPlace());
  EXPECT_EQ(d->detail, "with 'v', which lives there");
}

TEST(HostStateAutoAndDefaultRules, DecideUnpinnedOps) {
  Fixture f({Op("fill_constant", {}, {{"Out", {"lr"}}}, {OpOrigin::Kind::kHostState, -1, ""}),
             Op("slice", {{"Input", {"s"}}}, {{"Out", {"t"}}}),
             Op("slice", {{"Input", {"s"}}}, {{"Out", {"t"}}}, {OpOrigin::Kind::kGradOf, 1, ""})},
            {});
  f.options.auto_places[1] = {CPUPlace(), "0 copies instead of 2"};
  f.options.auto_places[2] = {CPUPlace(), "never applied: a derived op"};
  f.Reset({});
  ASSERT_OK_AND_ASSIGN(std::optional<PlaceDecision> d, f.Apply(HostStateRule, 0));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, CPUPlace());
  EXPECT_EQ(d->cause, PlacementCause::kHostState);
  ASSERT_OK_AND_ASSIGN(d, f.Apply(AutoRule, 1));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, CPUPlace());
  EXPECT_EQ(d->cause, PlacementCause::kAuto);
  EXPECT_EQ(d->detail, "0 copies instead of 2");
  ASSERT_OK_AND_ASSIGN(d, f.Apply(AutoRule, 2));
  EXPECT_FALSE(d.has_value());
  ASSERT_OK_AND_ASSIGN(d, f.Apply(DefaultRule, 1));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->place, kDev);
  EXPECT_EQ(d->cause, PlacementCause::kDefault);
}

}  // namespace
}  // namespace tandem
