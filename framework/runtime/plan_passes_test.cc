// The plan passes one at a time, on plans built by hand (PlanState is a
// plain struct): each pass's rule checked on the smallest plans that tell
// its cases apart. The executor's tests and the differential test check
// them all together.
#include "framework/runtime/plan_passes.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/device/device_registry.h"
#include "framework/op/op_schema.h"
#include "framework/testing/fake_devices.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

// An input-less op whose value depends on its attributes alone, as
// fill_constant declares itself (framework tests link no op schemas).
[[maybe_unused]] const bool kConstantSchema = [] {
  OpRegistry::Global().Register("test_constant").Output("Out").Constant();
  return true;
}();

// A plan of host steps over named slots, and the placed program they come
// from (its variables and ops); `persistable` names those slots.
class HandBuiltPlan {
 public:
  HandBuiltPlan(std::vector<std::string> slots, const std::vector<std::string>& persistable) {
    plan_.slot_names = std::move(slots);
    for (const std::string& name : plan_.slot_names) {
      VarDesc var;
      var.name = name;
      var.persistable =
          std::find(persistable.begin(), persistable.end(), name) != persistable.end();
      plan_.slot_persistable.push_back(var.persistable);
      CHECK(plan_.placed.program.block().AddVar(var).ok()) << name;
    }
    plan_.slot_folded.assign(plan_.slot_names.size(), false);
  }

  // Appends a host step of op `type` reading and writing the named slots.
  HandBuiltPlan& Step(const std::string& type, const std::vector<std::string>& reads,
                      const std::vector<std::string>& writes, const Place& place = CPUPlace()) {
    auto step = std::make_unique<PlanState::Step>();
    step->op.type = type;
    if (!reads.empty()) step->op.inputs["X"] = reads;
    if (!writes.empty()) step->op.outputs["Out"] = writes;
    step->index = static_cast<int>(plan_.steps.size());
    step->place = place;
    if (!place.is_host()) {
      absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(place);
      CHECK(device.ok()) << device.status();
      step->device = *device;
    }
    if (!reads.empty()) step->inputs.emplace_back("X", Slots(reads));
    if (!writes.empty()) step->outputs.emplace_back("Out", Slots(writes));
    plan_.placed.program.block().AppendOp(step->op);
    plan_.steps.push_back(std::move(step));
    return *this;
  }

  HandBuiltPlan& Fetch(const std::string& name) {
    plan_.fetch_names.push_back(name);
    plan_.fetch_slots.push_back(Slots({name})[0]);
    return *this;
  }

  PlanState* get() { return &plan_; }
  PlanState::Step& step(int i) { return *plan_.steps[i]; }

 private:
  std::vector<int> Slots(const std::vector<std::string>& names) const {
    std::vector<int> ids;
    for (const std::string& name : names) {
      auto at = std::find(plan_.slot_names.begin(), plan_.slot_names.end(), name);
      CHECK(at != plan_.slot_names.end()) << name;
      ids.push_back(static_cast<int>(at - plan_.slot_names.begin()));
    }
    return ids;
  }

  PlanState plan_;
};

TEST(FoldConstants, FoldsOnlyInputlessConstantsOfTheirOwnNonPersistableOutput) {
  HandBuiltPlan plan({"c", "w", "b", "x", "y"}, {"w"});
  plan.Step("test_constant", {}, {"c"})  // folded
      .Step("test_constant", {}, {"w"})  // a persistable: its initialiser runs every time
      .Step("test_constant", {}, {"b"})  // another op writes b too
      .Step("scale", {"x"}, {"b"})
      .Step("scale", {"c"}, {"y"});
  plan_passes::FoldConstants(plan.get());
  EXPECT_TRUE(plan.step(0).folded);
  EXPECT_FALSE(plan.step(1).folded);
  EXPECT_FALSE(plan.step(2).folded);
  EXPECT_FALSE(plan.step(4).folded);
  EXPECT_THAT(plan.get()->slot_folded, ElementsAre(true, false, false, false, false));
}

TEST(PlanReleases, FreesIntermediatesAfterTheirLastUse) {
  HandBuiltPlan plan({"x", "w", "h", "out", "c"}, {"w"});
  plan.Step("test_constant", {}, {"c"})
      .Step("mul", {"x", "w"}, {"h"})
      .Step("scale", {"h", "c"}, {"out"})
      .Fetch("out");
  plan_passes::FoldConstants(plan.get());
  plan_passes::PlanReleases(plan.get());
  // x (fed) and h die at their last reader; w is persistable, out fetched,
  // c a folded constant: kept.
  EXPECT_THAT(plan.get()->slot_releasable, ElementsAre(true, false, true, false, false));
  EXPECT_THAT(plan.step(0).release_after, IsEmpty());
  EXPECT_THAT(plan.step(1).release_after, ElementsAre(0));
  EXPECT_THAT(plan.step(2).release_after, ElementsAre(2));
}

TEST(BlockPipelineOnFetchedUpdates, NamesTheUpdateOfAFetchedPersistable) {
  HandBuiltPlan read_only({"w", "y"}, {"w"});
  read_only.Step("scale", {"w"}, {"y"}).Fetch("w").Fetch("y");
  plan_passes::BlockPipelineOnFetchedUpdates(read_only.get());
  EXPECT_EQ(read_only.get()->pipeline_blocker, "");

  HandBuiltPlan updated({"w", "g"}, {"w"});
  updated.Step("scale", {"w"}, {"g"}).Step("sgd", {"w", "g"}, {"w"}).Fetch("w");
  plan_passes::BlockPipelineOnFetchedUpdates(updated.get());
  EXPECT_THAT(updated.get()->pipeline_blocker,
              HasSubstr("fetch 'w' is a persistable that op 'sgd' (#1) updates"));
}

TEST(BuildSchedule, HostStepsThatEachNeedTheLastRunAsAChain) {
  HandBuiltPlan chain({"x", "a", "b", "c"}, {});
  chain.Step("scale", {"x"}, {"a"}).Step("scale", {"a"}, {"b"}).Step("scale", {"b"}, {"c"});
  plan_passes::BuildSchedule(chain.get());
  EXPECT_TRUE(chain.get()->host_only);
  EXPECT_TRUE(chain.get()->serial);
  EXPECT_THAT(chain.get()->schedule, HasSubstr("each step depends on the one before"));
  EXPECT_THAT(chain.step(2).preds, ElementsAre(Pair(1, EdgeKind::kCompletion)));
  EXPECT_THAT(chain.step(0).slots_used, ElementsAre(0, 1));

  // Two branches: the second step does not need the first, so steps can
  // run at once and the plan is no chain.
  HandBuiltPlan branches({"x", "a", "b", "c"}, {});
  branches.Step("scale", {"x"}, {"a"}).Step("scale", {"x"}, {"b"}).Step("sum", {"a", "b"}, {"c"});
  plan_passes::BuildSchedule(branches.get());
  EXPECT_TRUE(branches.get()->host_only);
  EXPECT_FALSE(branches.get()->serial);
  EXPECT_THAT(branches.get()->schedule, HasSubstr("concurrent"));
  EXPECT_THAT(branches.step(2).preds,
              ElementsAre(Pair(0, EdgeKind::kCompletion), Pair(1, EdgeKind::kCompletion)));
}

// Independent steps all queued on one device's compute stream run in
// stream order whatever the mode: serial. A host branch beside them is not.
TEST(BuildSchedule, DeviceStepsOnOneStreamAreSerial) {
  HandBuiltPlan device({"x", "a", "b", "c"}, {});
  device.Step("scale", {"x"}, {"a"}, TestDevPlace(0))
      .Step("scale", {"x"}, {"b"}, TestDevPlace(0))
      .Step("sum", {"a", "b"}, {"c"}, TestDevPlace(0));
  plan_passes::BuildSchedule(device.get());
  EXPECT_FALSE(device.get()->host_only);
  EXPECT_EQ(device.step(1).lane, Lane::kCompute);
  EXPECT_TRUE(device.get()->serial);
  EXPECT_THAT(device.get()->schedule,
              HasSubstr(absl::StrCat("every step is queued on ", TestDevPlace(0).ToString(),
                                     "'s compute stream")));

  HandBuiltPlan mixed({"x", "a", "b", "c"}, {});
  mixed.Step("scale", {"x"}, {"a"}, TestDevPlace(0))
      .Step("scale", {"x"}, {"b"})  // the host works beside the device
      .Step("sum", {"a", "b"}, {"c"}, TestDevPlace(0));
  plan_passes::BuildSchedule(mixed.get());
  EXPECT_FALSE(mixed.get()->serial);

  HandBuiltPlan two_devices({"x", "a", "b", "c"}, {});
  two_devices.Step("scale", {"x"}, {"a"}, TestDevPlace(0))
      .Step("scale", {"x"}, {"b"}, TestDevPlace(1))
      .Step("sum", {"a", "b"}, {"c"}, TestDevPlace(0));
  plan_passes::BuildSchedule(two_devices.get());
  EXPECT_FALSE(two_devices.get()->serial);
}

// Two independent device steps and a copy of their sum to the host: the
// copy's own lane could overlap nothing (every kernel comes before it), so
// a solo run queues it on the compute stream and the plan is serial. A
// kernel that does not feed the copy could overlap it: not serial.
TEST(ChooseSoloCopyStreams, ACopyNoKernelCanOverlapMakesTheSoloRunSerial) {
  auto build = [](bool independent_kernel) {
    auto plan = std::make_unique<HandBuiltPlan>(
        std::vector<std::string>{"x", "a", "b", "c", "c@cpu", "d"}, std::vector<std::string>{});
    plan->Step("scale", {"x"}, {"a"}, TestDevPlace(0))
        .Step("scale", {"x"}, {"b"}, TestDevPlace(0))
        .Step("sum", {"a", "b"}, {"c"}, TestDevPlace(0))
        .Step("memcpy_d2h", {"c"}, {"c@cpu"}, TestDevPlace(0));
    plan->step(3).is_copy = true;
    plan->step(3).copy_to = CPUPlace();
    if (independent_kernel) plan->Step("scale", {"x"}, {"d"}, TestDevPlace(0));
    plan_passes::BuildSchedule(plan->get());
    plan_passes::ChooseSoloCopyStreams(plan->get());
    return plan;
  };
  auto only_feeders = build(false);
  EXPECT_EQ(only_feeders->step(3).lane, Lane::kCopy);
  EXPECT_TRUE(only_feeders->step(3).waits.solo_on_compute);
  EXPECT_TRUE(only_feeders->get()->serial);
  EXPECT_THAT(only_feeders->get()->schedule, HasSubstr("its copies too"));

  auto beside = build(true);
  EXPECT_FALSE(beside->step(3).waits.solo_on_compute);
  EXPECT_FALSE(beside->get()->serial);
}

// A recomputed forward op reads only what the forward made: it still waits
// for the last op before it that is neither a copy nor recomputed (its
// output is meant to be made late), and a second recomputed op after it
// follows that op too.
TEST(BuildSchedule, RecomputedOpsWaitForTheBackwardOpBeforeThem) {
  HandBuiltPlan plan({"x", "h", "dy", "dh", "h2", "h3"}, {});
  plan.Step("gelu", {"x"}, {"h"})
      .Step("scale", {"dy"}, {"dh"})
      .Step("memcpy_h2d", {"x"}, {"h2"})
      .Step("gelu", {"x"}, {"h2"})
      .Step("gelu", {"x"}, {"h3"});
  plan.step(2).is_copy = true;
  for (int i : {3, 4}) plan.step(i).op.origin = {OpOrigin::Kind::kRecomputeOf, 0, ""};
  plan_passes::BuildSchedule(plan.get());
  EXPECT_THAT(plan.step(3).preds,
              ElementsAre(Pair(1, EdgeKind::kCompletion), Pair(2, EdgeKind::kCompletion)));
  EXPECT_THAT(plan.step(4).preds, ElementsAre(Pair(1, EdgeKind::kCompletion)));
  EXPECT_THAT(plan.step(1).preds, IsEmpty());  // an op of the program: as its data says
}

TEST(BuildSchedule, RecomputedOpsDoNotFollowAFoldedConstant) {
  // The loss gradient's fill_constant runs once, before any run: holding
  // the recomputed ops behind it would hold them behind nothing.
  HandBuiltPlan plan({"x", "h", "loss", "dloss", "h2"}, {});
  plan.Step("gelu", {"x"}, {"h"})
      .Step("mean", {"h"}, {"loss"})
      .Step("fill_constant", {}, {"dloss"})
      .Step("gelu", {"x"}, {"h2"});
  plan.step(2).folded = true;
  plan.step(3).op.origin = {OpOrigin::Kind::kRecomputeOf, 0, ""};
  plan_passes::BuildSchedule(plan.get());
  EXPECT_THAT(plan.step(3).preds, ElementsAre(Pair(1, EdgeKind::kCompletion)));
}

// sgd placed on a device where its parameter is read: Param is the
// placer's copy 'w@sim:0', ParamOut 'w' itself (written back home), and
// the kernel updates the copy's buffer. A reader of the copy that nothing
// in the backward depends on (a forward op whose value only a fetch or a
// recomputed twin uses) must still come before the update.
TEST(MarkInPlaceUpdates, AnUpdateOfACopyWaitsForTheCopysReaders) {
  HandBuiltPlan plan({"w", "w@cpu", "w@sim:0", "x", "y", "g", "w@cpu#1"}, {"w"});
  plan.Step("memcpy_d2h", {"w"}, {"w@cpu"})
      .Step("memcpy_h2d", {"w@cpu"}, {"w@sim:0"})
      .Step("matmul", {"x", "w@sim:0"}, {"y"})
      .Step("scale", {"x"}, {"g"})
      .Step("sgd", {"w@sim:0", "g"}, {"w"})
      .Step("memcpy_d2h", {"w"}, {"w@cpu#1"})
      .Step("memcpy_h2d", {"w@cpu#1"}, {"w"});
  for (int i : {0, 1, 5, 6}) plan.step(i).is_copy = true;
  plan_passes::MarkInPlaceUpdates(plan.get());
  EXPECT_THAT(plan.step(4).updated_inputs, ElementsAre(2));  // w@sim:0
  for (int i : {0, 1, 2, 3, 5, 6}) EXPECT_THAT(plan.step(i).updated_inputs, IsEmpty()) << i;
  plan_passes::BuildSchedule(plan.get());
  std::vector<int> preds;
  for (const auto& [i, kind] : plan.step(4).preds) preds.push_back(i);
  EXPECT_THAT(preds, ElementsAre(0, 1, 2, 3));  // the matmul (#2) included
}

TEST(MarkInPlaceUpdates, AnUpdateOfTheVariableItselfIsAnOrdinaryWrite) {
  HandBuiltPlan plan({"w", "g"}, {"w"});
  plan.Step("scale", {"w"}, {"g"}).Step("sgd", {"w", "g"}, {"w"});
  plan_passes::MarkInPlaceUpdates(plan.get());
  EXPECT_THAT(plan.step(1).updated_inputs, IsEmpty());
}

// A step whose kernel may bind its output to input X's tensor.
const KernelDef& ForwardingDef() {
  static const KernelDef* def = new KernelDef(KernelDef("forward_x", "cpu").ForwardsInput("X"));
  return *def;
}

TEST(AllowForwardedInputs, OnlyWhereNoNameKeepsOrUpdatesTheSharedBuffer) {
  // 0: g from x; 1: d forwards g; 2: e reads d; 3: e written again (a
  // fresh buffer: harmless); 4: f forwards x, which is fed.
  HandBuiltPlan plan({"x", "g", "d", "e", "f"}, {});
  plan.Step("scale", {"x"}, {"g"})
      .Step("forward_x", {"g"}, {"d"})
      .Step("scale", {"d"}, {"e"})
      .Step("scale", {"e"}, {"e"})
      .Step("forward_x", {"x"}, {"f"});
  plan.get()->feed_slots = {0};
  for (int i : {1, 4}) plan.step(i).def = &ForwardingDef();
  plan_passes::AllowForwardedInputs(plan.get());
  EXPECT_TRUE(plan.step(1).forwards_inputs);
  EXPECT_FALSE(plan.step(4).forwards_inputs);  // the caller's fed tensor
  EXPECT_FALSE(plan.step(0).forwards_inputs);  // no contract
  plan.Fetch("d");
  plan_passes::AllowForwardedInputs(plan.get());
  EXPECT_FALSE(plan.step(1).forwards_inputs);  // the caller gets d
}

TEST(AllowForwardedInputs, NeverIntoPersistablesUpdatesOrPlansWithCollectives) {
  HandBuiltPlan plan({"w", "g", "d", "x", "y"}, {"w"});
  plan.Step("forward_x", {"w"}, {"d"})  // a persistable's buffer
      .Step("scale", {"x"}, {"g"})
      .Step("forward_x", {"g"}, {"y"});
  for (int i : {0, 2}) plan.step(i).def = &ForwardingDef();
  plan_passes::AllowForwardedInputs(plan.get());
  EXPECT_FALSE(plan.step(0).forwards_inputs);
  EXPECT_TRUE(plan.step(2).forwards_inputs);
  plan.step(1).updated_inputs = {1};  // g updated in place under another name
  plan_passes::AllowForwardedInputs(plan.get());
  EXPECT_FALSE(plan.step(2).forwards_inputs);
  plan.step(1).updated_inputs.clear();
  static const KernelDef* allreduce =
      new KernelDef(KernelDef("c_allreduce_sum", "cpu").Collective(CollectiveKind::kAllReduce));
  plan.step(1).def = allreduce;  // an all-reduce writes its input
  plan_passes::AllowForwardedInputs(plan.get());
  EXPECT_FALSE(plan.step(2).forwards_inputs);
}

TEST(BuildSchedule, HoldsAnUpdateThatNothingElseNeedsForTheCommit) {
  HandBuiltPlan plan({"x", "w", "g", "loss"}, {"w"});
  plan.Step("mul", {"x", "w"}, {"loss"})
      .Step("scale", {"loss"}, {"g"})
      .Step("sgd", {"w", "g"}, {"w"});
  plan_passes::BuildSchedule(plan.get());
  EXPECT_TRUE(plan.step(2).held_for_commit);  // writes a persistable, feeds no one
  EXPECT_FALSE(plan.step(0).held_for_commit);
  EXPECT_FALSE(plan.step(1).held_for_commit);
}

TEST(BuildSchedule, HoldsNoUpdateWithoutAtomicUpdates) {
  HandBuiltPlan plan({"x", "w", "g", "loss"}, {"w"});
  plan.Step("mul", {"x", "w"}, {"loss"})
      .Step("scale", {"loss"}, {"g"})
      .Step("sgd", {"w", "g"}, {"w"});
  plan.get()->atomic_updates = false;
  plan_passes::BuildSchedule(plan.get());
  for (int i : {0, 1, 2}) EXPECT_FALSE(plan.step(i).held_for_commit) << i;
}

// A host step whose result a device step of the run reads feeds a device;
// one read only by host steps, the device step and the last host step do not.
TEST(BuildSchedule, MarksTheHostStepsThatFeedADevice) {
  HandBuiltPlan plan({"w", "w16", "y", "z", "s"}, {"w"});
  plan.Step("adam", {"w"}, {"w"})
      .Step("cast", {"w"}, {"w16"})
      .Step("scale", {"w16"}, {"y"}, TestDevPlace(0))
      .Step("norm", {"w"}, {"s"})
      .Step("sum", {"s", "y"}, {"z"});
  plan_passes::BuildSchedule(plan.get());
  EXPECT_FALSE(plan.step(0).feeds_device);  // feeds the cast and the norm, host steps
  EXPECT_TRUE(plan.step(1).feeds_device);
  EXPECT_FALSE(plan.step(2).feeds_device);  // a device step
  EXPECT_FALSE(plan.step(3).feeds_device);
  EXPECT_FALSE(plan.step(4).feeds_device);
}

}  // namespace
}  // namespace tandem
