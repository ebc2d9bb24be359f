// PlaceProgram on hand-made programs over the test devices (cpu, testdev:0,
// testdev:1; framework/testing/fake_devices.h) and test kernels that never
// run: the copies it inserts, their names and typed fields, stale copies,
// the CPU fallback, write-backs, transfer policies and its errors. Each rule
// alone is tested in placement_passes_test.cc.
#include "framework/placement/placer.h"

#include <string>
#include <vector>

#include "framework/kernel/kernel_registry.h"
#include "framework/testing/fake_devices.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

class NoopKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext*) override { return absl::OkStatus(); }
};

REGISTER_KERNEL(KernelDef("pl_make", "cpu"), NoopKernel);
REGISTER_KERNEL(KernelDef("pl_make", "testdev"), NoopKernel);
REGISTER_KERNEL(KernelDef("pl_neg", "cpu"), NoopKernel);
REGISTER_KERNEL(KernelDef("pl_neg", "testdev"), NoopKernel);
REGISTER_KERNEL(KernelDef("pl_update", "testdev"), NoopKernel);
REGISTER_KERNEL(KernelDef("pl_cpu_only", "cpu"), NoopKernel);
REGISTER_KERNEL(KernelDef("pl_gpu_only", "gpu"), NoopKernel);
// Reads Shape on the host and writes Size there, wherever it runs.
REGISTER_KERNEL(KernelDef("pl_resize", "testdev").HostMemory("Shape").HostMemory("Size"),
                NoopKernel);

const Place kDev0 = TestDevPlace(0);
const Place kDev1 = TestDevPlace(1);

OpDesc Op(const std::string& type, std::map<std::string, std::vector<std::string>> in,
          std::map<std::string, std::vector<std::string>> out, std::string device = "") {
  OpDesc op;
  op.type = type;
  op.inputs = std::move(in);
  op.outputs = std::move(out);
  op.op_device = std::move(device);
  return op;
}

// A program of `ops` whose variables are float32 [4] (persistable: `persistables`).
Program MakeProgram(std::vector<OpDesc> ops, const std::vector<std::string>& persistables = {}) {
  Program p;
  for (const OpDesc& op : ops) {
    for (const auto* args : {&op.inputs, &op.outputs}) {
      for (const auto& [arg, vars] : *args) {
        for (const std::string& v : vars)
          EXPECT_OK(p.block().AddVar(VarDesc{v, DataType::kFloat32, Shape({4})}));
      }
    }
  }
  for (const std::string& v : persistables) p.block().FindVar(v)->persistable = true;
  for (OpDesc& op : ops) p.block().AppendOp(std::move(op));
  return p;
}

PlacerOptions OnDev0() {
  PlacerOptions options;
  options.default_place = kDev0;
  return options;
}

std::vector<std::string> Types(const PlacedProgram& placed) {
  std::vector<std::string> types;
  for (const OpDesc& op : placed.program.block().ops()) types.push_back(op.type);
  return types;
}

TEST(PlaceProgram, CopiesOneValueOncePerDestination) {
  Program p = MakeProgram({Op("pl_make", {}, {{"Out", {"a"}}}, "cpu"),
                           Op("pl_neg", {{"X", {"a"}}}, {{"Out", {"b"}}}),
                           Op("pl_neg", {{"X", {"a"}}}, {{"Out", {"c"}}}),
                           Op("pl_neg", {{"X", {"b"}}}, {{"Out", {"d"}}}, "cpu")});
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(p, OnDev0()));

  EXPECT_THAT(Types(placed),
              ElementsAre("pl_make", "memcpy_h2d", "pl_neg", "pl_neg", "memcpy_d2h", "pl_neg"));
  EXPECT_THAT(placed.places, ElementsAre(CPUPlace(), kDev0, kDev0, kDev0, kDev0, CPUPlace()));
  EXPECT_THAT(placed.source_ops, ElementsAre(0, -1, 1, 2, -1, 3));
  EXPECT_EQ(placed.num_copies, 2);
  const std::vector<OpDesc>& ops = placed.program.block().ops();
  // Both device readers read the one copy; the host reader reads b's.
  EXPECT_EQ(ops[2].Input("X"), "a@testdev:0");
  EXPECT_EQ(ops[3].Input("X"), "a@testdev:0");
  EXPECT_EQ(ops[5].Input("X"), "b@cpu");
  EXPECT_EQ(ops[2].op_device, "testdev:0");  // every op carries its resolved place
  EXPECT_EQ(ops[4].op_device, "testdev:0");  // a copy runs on its device side
  EXPECT_EQ(ops[4].role, OpRole::kCopy);

  const PlacementEntry& up = placed.table[1];
  EXPECT_EQ(up.cause, PlacementCause::kCopy);
  EXPECT_EQ(up.detail, "variable 'a' is on cpu; op 'pl_neg' (#1) reads X on testdev:0");
  ASSERT_TRUE(up.copy.has_value());
  EXPECT_EQ(up.copy->var, "a");
  EXPECT_EQ(up.copy->source, "a");
  EXPECT_EQ(up.copy->output, "a@testdev:0");
  EXPECT_EQ(up.copy->from, CPUPlace());
  EXPECT_EQ(up.copy->to, kDev0);
  EXPECT_EQ(up.copy->consumer, 2);  // its reader's index in the placed program
  EXPECT_EQ(up.copy->consumer_type, "pl_neg");
  EXPECT_EQ(up.copy->consumer_arg, "X");
  const PlacementEntry& down = placed.table[4];
  ASSERT_TRUE(down.copy.has_value());
  EXPECT_EQ(down.copy->from, kDev0);
  EXPECT_EQ(down.copy->to, CPUPlace());
  EXPECT_EQ(down.copy->consumer, 5);
  EXPECT_TRUE(placed.is_copy(4));
  EXPECT_FALSE(placed.is_copy(5));
  // Copies have no kernel; ops have the kernel of their place.
  EXPECT_EQ(placed.kernels[1], nullptr);
  ASSERT_NE(placed.kernels[2], nullptr);
  EXPECT_EQ(placed.kernels[2]->def.device_type_name(), "testdev");
  EXPECT_EQ(placed.kernels[5]->def.device_type_name(), "cpu");
  // The copy's variable is declared like its source, not persistable.
  const VarDesc* copy_var = placed.program.block().FindVar("a@testdev:0");
  ASSERT_NE(copy_var, nullptr);
  EXPECT_EQ(copy_var->shape, Shape({4}));
  EXPECT_FALSE(copy_var->persistable);
}

TEST(PlaceProgram, RewrittenValueMakesItsCopiesStale) {
  Program p = MakeProgram({Op("pl_make", {}, {{"Out", {"a"}}}, "cpu"),
                           Op("pl_neg", {{"X", {"a"}}}, {{"Out", {"b"}}}),
                           Op("pl_neg", {{"X", {"b"}}}, {{"Out", {"a"}}}, "cpu"),
                           Op("pl_neg", {{"X", {"a"}}}, {{"Out", {"e"}}})});
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(p, OnDev0()));
  EXPECT_THAT(Types(placed), ElementsAre("pl_make", "memcpy_h2d", "pl_neg", "memcpy_d2h", "pl_neg",
                                         "memcpy_h2d", "pl_neg"));
  // The second upload of 'a' is of its new value, under a fresh name.
  EXPECT_EQ(placed.program.block().ops()[6].Input("X"), "a@testdev:0#1");
  EXPECT_EQ(placed.table[5].copy->output, "a@testdev:0#1");
  EXPECT_EQ(placed.num_copies, 3);
}

TEST(PlaceProgram, DeviceToDeviceGoesThroughTheHost) {
  Program p = MakeProgram({Op("pl_make", {}, {{"Out", {"a"}}}),
                           Op("pl_neg", {{"X", {"a"}}}, {{"Out", {"b"}}}, "testdev:1")});
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(p, OnDev0()));
  EXPECT_THAT(Types(placed), ElementsAre("pl_make", "memcpy_d2h", "memcpy_h2d", "pl_neg"));
  EXPECT_THAT(placed.places, ElementsAre(kDev0, kDev0, kDev1, kDev1));
  const CopyStep& down = *placed.table[1].copy;
  const CopyStep& up = *placed.table[2].copy;
  EXPECT_EQ(down.from, kDev0);
  EXPECT_EQ(down.to, CPUPlace());
  EXPECT_EQ(down.output, "a@cpu");
  EXPECT_EQ(up.source, "a@cpu");
  EXPECT_EQ(up.from, CPUPlace());
  EXPECT_EQ(up.to, kDev1);
  EXPECT_EQ(down.consumer, 3);
  EXPECT_EQ(up.consumer, 3);
  EXPECT_EQ(placed.program.block().ops()[3].Input("X"), "a@testdev:1");
}

TEST(PlaceProgram, HostMemoryArgumentsLiveOnTheHost) {
  Program p = MakeProgram(
      {Op("pl_make", {}, {{"Out", {"x"}}}), Op("pl_make", {}, {{"Out", {"shape"}}}),
       Op("pl_resize", {{"X", {"x"}}, {"Shape", {"shape"}}}, {{"Out", {"y"}}, {"Size", {"n"}}}),
       Op("pl_neg", {{"X", {"n"}}}, {{"Out", {"m"}}}, "cpu")});
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(p, OnDev0()));
  // Only Shape is copied: X is read on the device, and Size is written on
  // the host, where the last op reads it.
  EXPECT_THAT(Types(placed),
              ElementsAre("pl_make", "pl_make", "memcpy_d2h", "pl_resize", "pl_neg"));
  const PlacementEntry& copy = placed.table[2];
  EXPECT_EQ(copy.cause, PlacementCause::kHostArg);
  EXPECT_EQ(copy.copy->var, "shape");
  EXPECT_EQ(copy.copy->consumer_arg, "Shape");
  EXPECT_EQ(copy.detail,
            "variable 'shape' is on testdev:0; op 'pl_resize' (#2) reads Shape on cpu (HostMemory "
            "argument)");
  EXPECT_EQ(placed.program.block().ops()[4].Input("X"), "n");
}

TEST(PlaceProgram, OpWithoutAKernelOnItsPlaceFallsBackToTheCpu) {
  Program p = MakeProgram(
      {Op("pl_make", {}, {{"Out", {"x"}}}), Op("pl_cpu_only", {{"X", {"x"}}}, {{"Out", {"y"}}})});
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(p, OnDev0()));
  EXPECT_THAT(Types(placed), ElementsAre("pl_make", "memcpy_d2h", "pl_cpu_only"));
  const PlacementEntry& fallback = placed.table[2];
  EXPECT_EQ(fallback.place, CPUPlace());
  EXPECT_EQ(fallback.cause, PlacementCause::kFallback);
  EXPECT_EQ(fallback.detail, "no kernel on testdev:0 (default); fell back to cpu");

  PlacerOptions strict = OnDev0();
  strict.strict = true;
  EXPECT_THAT(
      PlaceProgram(p, strict).status(),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("op 'pl_cpu_only' (#1) on testdev:0")));
  Program nowhere = MakeProgram({Op("pl_gpu_only", {}, {{"Out", {"x"}}})});
  EXPECT_THAT(PlaceProgram(nowhere, OnDev0()).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("op 'pl_gpu_only' (#0) has no kernel on testdev:0 nor on cpu")));
}

TEST(PlaceProgram, PersistableUpdatedAwayFromItsHomeIsWrittenBack) {
  Program p = MakeProgram({Op("pl_update", {{"Param", {"w"}}}, {{"ParamOut", {"w"}}})}, {"w"});
  PlacerOptions options = OnDev0();
  options.initial_places["w"] = CPUPlace();
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(p, options));
  EXPECT_THAT(Types(placed), ElementsAre("memcpy_h2d", "pl_update", "memcpy_d2h"));
  const PlacementEntry& back = placed.table[2];
  EXPECT_EQ(back.cause, PlacementCause::kWriteBack);
  EXPECT_EQ(back.detail, "persistable 'w' was updated on testdev:0; it lives on cpu");
  EXPECT_EQ(back.copy->source, "w");
  EXPECT_EQ(back.copy->output, "w");  // the copy writes the persistable itself
  EXPECT_EQ(back.copy->consumer, -1);
  EXPECT_EQ(back.copy->consumer_type, "write-back");
  EXPECT_EQ(placed.initial_places.at("w"), CPUPlace());

  // Already on its home: nothing to copy.
  options.initial_places["w"] = kDev0;
  ASSERT_OK_AND_ASSIGN(placed, PlaceProgram(p, options));
  EXPECT_THAT(Types(placed), ElementsAre("pl_update"));
}

TEST(PlaceProgram, DisallowPolicyRefusesCopiesUnlessTheOpAllowsThem) {
  Program p = MakeProgram(
      {Op("pl_make", {}, {{"Out", {"a"}}}, "cpu"), Op("pl_neg", {{"X", {"a"}}}, {{"Out", {"b"}}})});
  PlacerOptions options = OnDev0();
  options.policy = TransferPolicy::kDisallow;
  EXPECT_THAT(PlaceProgram(p, options).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("transfer policy 'disallow' forbids a host->device copy: variable "
                                 "'a' is on cpu; op 'pl_neg' (#1) reads X on testdev:0. Place the "
                                 "op with device_guard(\"cpu\") or allow transfers")));
  p.block().mutable_ops()[1].transfer_policy = TransferPolicy::kAllow;
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(p, options));
  EXPECT_EQ(placed.num_copies, 1);

  Program update = MakeProgram({Op("pl_update", {{"Param", {"w"}}}, {{"ParamOut", {"w"}}})}, {"w"});
  update.block().mutable_ops()[0].transfer_policy = TransferPolicy::kAllow;
  options.initial_places["w"] = CPUPlace();
  EXPECT_THAT(PlaceProgram(update, options).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("forbids a copy back: persistable 'w' was updated on testdev:0")));
}

TEST(PlaceProgram, ReadOfAValueNothingProducesIsRefused) {
  Program p = MakeProgram({Op("pl_neg", {{"X", {"ghost"}}}, {{"Out", {"b"}}})});
  EXPECT_THAT(PlaceProgram(p, OnDev0()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'pl_neg' (#0) reads variable 'ghost', which no earlier op "
                                 "produces and which is neither fed nor in the scope")));
  // A fed variable lives where initial_places says.
  PlacerOptions fed = OnDev0();
  fed.initial_places["ghost"] = CPUPlace();
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(p, fed));
  EXPECT_THAT(Types(placed), ElementsAre("memcpy_h2d", "pl_neg"));
}

TEST(PlaceProgram, GuardOnADeviceThatDoesNotExistIsRefused) {
  Program p = MakeProgram({Op("pl_make", {}, {{"Out", {"a"}}}, "testdev:5")});
  EXPECT_THAT(PlaceProgram(p, OnDev0()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'pl_make' (#0) placed by device_guard(\"testdev:5\"): place "
                                 "testdev:5 does not exist: 2 testdev device(s) available")));
}

TEST(PlaceProgram, ADefaultPlaceThatDoesNotExistIsNamedWithItsIndex) {
  Program p = MakeProgram({Op("pl_make", {}, {{"Out", {"a"}}})});
  PlacerOptions options;
  options.default_place = Place(DeviceType::CPU(), 1);  // an executor for "cpu:1"
  EXPECT_THAT(PlaceProgram(p, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'pl_make' (#0) placed by rule 'default' on cpu:1: place "
                                 "cpu:1 does not exist")));
  options.default_place = Place(kDev0.type(), 5);
  EXPECT_THAT(PlaceProgram(p, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'pl_make' (#0) placed by rule 'default' on testdev:5: place "
                                 "testdev:5 does not exist")));
}

TEST(PlaceProgram, TableListsEveryOpThenTheCounts) {
  Program p = MakeProgram(
      {Op("pl_make", {}, {{"Out", {"a"}}}, "cpu"), Op("pl_neg", {{"X", {"a"}}}, {{"Out", {"b"}}})});
  PlacerOptions options = OnDev0();
  options.auto_summary = "auto: 1 op moved";
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(p, options));
  EXPECT_EQ(placed.TableString(),
            "#    op                     place    cause      detail\n"
            "0    pl_make                cpu      guard      op_device \"cpu\"\n"
            "1    memcpy_h2d             testdev:0 copy       variable 'a' is on cpu; op 'pl_neg' "
            "(#1) reads X on testdev:0\n"
            "2    pl_neg                 testdev:0 default    no device_guard\n"
            "2 ops, 1 copies\n"
            "auto: 1 op moved\n");
}

TEST(ResolveOpDevice, FillsTheDefaultPlaceIn) {
  EXPECT_THAT(ResolveOpDevice("", kDev1), IsOkAndHolds(kDev1));
  EXPECT_THAT(ResolveOpDevice("testdev", kDev1), IsOkAndHolds(kDev1));  // the default's index
  EXPECT_THAT(ResolveOpDevice("testdev", CPUPlace()), IsOkAndHolds(kDev0));
  EXPECT_THAT(ResolveOpDevice("testdev:1", kDev0), IsOkAndHolds(kDev1));
  EXPECT_THAT(ResolveOpDevice("cpu", kDev0), IsOkAndHolds(CPUPlace()));
  EXPECT_THAT(ResolveOpDevice("testdev:x", kDev0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad device index 'x'")));
}

}  // namespace
}  // namespace tandem
