#include "framework/estimate/memory_policy.h"

#include <string>
#include <vector>

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

TEST(FoldedConstants, OnlyInputlessFillsOfPrivateSingleWriterVariables) {
  Block block;
  for (const std::string name : {"c", "w", "b", "x", "y", "d"}) {
    VarDesc v;
    v.name = name;
    v.persistable = name == "w";
    ASSERT_TRUE(block.AddVar(v).ok());
  }
  block.AppendOp(Op("fill_constant", {}, {"c"}));  // folded
  block.AppendOp(Op("fill_constant", {}, {"w"}));  // persistable: re-initialised each run
  block.AppendOp(Op("fill_constant", {}, {"b"}));  // b has a second writer
  block.AppendOp(Op("scale", {"x"}, {"b"}));
  block.AppendOp(Op("fill_constant", {"x"}, {"d"}));  // reads an input
  block.AppendOp(Op("scale", {}, {"y"}));             // not a fill
  EXPECT_THAT(FoldedConstants(block), ElementsAre("c"));
}

TEST(ReleasedAfterLastUse, KeepsPersistablesFetchesAndConstants) {
  EXPECT_TRUE(ReleasedAfterLastUse({}));
  EXPECT_FALSE(ReleasedAfterLastUse({/*persistable=*/true, false, false}));
  EXPECT_FALSE(ReleasedAfterLastUse({false, /*fetched=*/true, false}));
  EXPECT_FALSE(ReleasedAfterLastUse({false, false, /*folded=*/true}));
}

}  // namespace
}  // namespace tandem
