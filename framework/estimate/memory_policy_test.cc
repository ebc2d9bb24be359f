#include "framework/estimate/memory_policy.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "framework/op/op_schema.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

OpDesc Op(const std::string& type, std::vector<std::string> in, std::vector<std::string> out) {
  OpDesc op;
  op.type = type;
  if (!in.empty()) op.inputs["X"] = std::move(in);
  if (!out.empty()) op.outputs["Out"] = std::move(out);
  return op;
}

// Test schemas: a constant (as fill_constant declares itself) and an
// input-less op that is not (a value that may change between runs).
[[maybe_unused]] const bool kSchemas = [] {
  OpRegistry::Global().Register("test_constant").Output("Out").Constant();
  OpRegistry::Global().Register("test_source").Output("Out");
  return true;
}();

TEST(FoldedConstants, OnlyInputlessConstantsOfPrivateSingleWriterVariables) {
  Block block;
  for (const std::string name : {"c", "w", "b", "x", "y", "d", "s"}) {
    VarDesc v;
    v.name = name;
    v.persistable = name == "w";
    ASSERT_TRUE(block.AddVar(v).ok());
  }
  block.AppendOp(Op("test_constant", {}, {"c"}));  // folded
  block.AppendOp(Op("test_constant", {}, {"w"}));  // persistable: re-initialised each run
  block.AppendOp(Op("test_constant", {}, {"b"}));  // b has a second writer
  block.AppendOp(Op("scale", {"x"}, {"b"}));
  block.AppendOp(Op("test_constant", {"x"}, {"d"}));  // reads an input
  block.AppendOp(Op("scale", {}, {"y"}));             // no schema here: not a constant
  block.AppendOp(Op("test_source", {}, {"s"}));       // its schema is not Constant()
  EXPECT_THAT(FoldedConstants(block), ElementsAre("c"));
}

TEST(ReleasedAfterLastUse, KeepsPersistablesFetchesAndConstants) {
  EXPECT_TRUE(ReleasedAfterLastUse({}));
  EXPECT_FALSE(ReleasedAfterLastUse({/*persistable=*/true, false, false}));
  EXPECT_FALSE(ReleasedAfterLastUse({false, /*fetched=*/true, false}));
  EXPECT_FALSE(ReleasedAfterLastUse({false, false, /*folded=*/true}));
}

// A placed program by hand: op `type` writing `out` from `in`; a copy when
// `to` is set.
void Append(PlacedProgram* placed, const std::string& type, const std::string& in,
            const std::string& out, std::optional<Place> to = std::nullopt) {
  placed->program.block().AppendOp(
      Op(type, in.empty() ? std::vector<std::string>{} : std::vector<std::string>{in}, {out}));
  PlacementEntry entry;
  entry.op_index = static_cast<int>(placed->table.size());
  entry.op_type = type;
  if (to.has_value()) {
    CopyStep copy;
    copy.source = in;
    copy.output = out;
    copy.to = *to;
    entry.copy = copy;
  }
  placed->table.push_back(entry);
}

TEST(PinnedCopySources, KernelsWhoseOutputIsUploadedNextWriteInTheDevicesPinnedMemory) {
  const Place dev0 = GPUPlace(0), dev1 = GPUPlace(1);  // places only: no device is made
  PlacedProgram placed;
  Append(&placed, "scale", "x", "h");                         // #0: uploaded by #1 and #2
  Append(&placed, "memcpy_h2d", "h", "h@sim:0", dev0);        // #1
  Append(&placed, "memcpy_h2d", "h", "h@sim:1", dev1);        // #2: the first upload's device wins
  Append(&placed, "memcpy_h2d", "x", "x@sim:0", dev0);        // #3: a feed: nothing to pin
  Append(&placed, "memcpy_d2h", "h@sim:0", "y", CPUPlace());  // #4: a copy to the host
  Append(&placed, "memcpy_h2d", "y", "y@sim:1", dev1);        // #5: its producer is a copy
  Append(&placed, "relu", "h", "r");                          // #6: read on the host only
  const std::map<int, Place> pinned = PinnedCopySources(placed);
  ASSERT_EQ(pinned.size(), 1u);
  EXPECT_EQ(pinned.begin()->first, 0);
  EXPECT_EQ(pinned.begin()->second, dev0);
}

// A persistable uploaded before the op that writes it (an offloaded
// update's 16-bit working copy): the next run uploads what that op wrote,
// so it writes in pinned memory; a non-persistable written after its
// upload (the upload reads a feed of that name) is not pinned.
TEST(PinnedCopySources, APersistableWrittenLaterInTheProgramIsPinnedForTheNextRunsUpload) {
  const Place dev0 = GPUPlace(0);
  PlacedProgram placed;
  for (const char* name : {"w16", "x"}) {
    VarDesc v;
    v.name = name;
    v.persistable = std::string(name) == "w16";
    ASSERT_TRUE(placed.program.block().AddVar(v).ok());
  }
  Append(&placed, "memcpy_h2d", "w16", "w16@sim:0", dev0);  // #0: reads the run before's
  Append(&placed, "memcpy_h2d", "x", "x@sim:0", dev0);      // #1
  Append(&placed, "scale", "g", "w16");                     // #2: the update writes it
  Append(&placed, "scale", "g", "x");                       // #3: x is not persistable
  const std::map<int, Place> pinned = PinnedCopySources(placed);
  ASSERT_EQ(pinned.size(), 1u);
  EXPECT_EQ(pinned.begin()->first, 2);
  EXPECT_EQ(pinned.begin()->second, dev0);
}

TEST(UploadIsStaged, OnlyUnwrittenValuesToDevicesWithPinnedMemory) {
  EXPECT_TRUE(UploadIsStaged(/*device_has_pinned_memory=*/true, /*written_before=*/false));
  EXPECT_FALSE(UploadIsStaged(true, true));    // read in place
  EXPECT_FALSE(UploadIsStaged(false, false));  // host memory is the device's
}

}  // namespace
}  // namespace tandem
