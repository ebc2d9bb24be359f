#include "models/ctr/ctr_model.h"

#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

CtrModelConfig Small() {
  CtrModelConfig config;
  config.vocab_sizes = {10, 20, 30};
  config.embedding_dim = 4;
  config.hidden = {8};
  return config;
}

TEST(CtrModelTest, TablesAndTheirUpdatesStayOnTheCpuWithSparseGradients) {
  ProgramBuilder b;
  Adam adam(1e-3);
  ASSERT_OK_AND_ASSIGN(CtrModel m, BuildCtrModel(Small(), &adam, &b));
  EXPECT_THAT(m.tables, ElementsAre("table_0", "table_1", "table_2"));
  EXPECT_EQ(b.main_program().block().FindVar("table_2")->shape, Shape({30, 4}));
  // The lookups are pinned to the cpu; their gradients and the tables'
  // updates derive from them (the placer puts them there too:
  // tests/runtime/placement_test.cc).
  const std::vector<OpDesc>& ops = b.main_program().block().ops();
  int cpu_lookups = 0, table_updates = 0, lookup_grads = 0;
  for (const OpDesc& op : ops) {
    const bool on_cpu = op.op_device == "cpu";
    if (op.type == "lookup_table") {
      EXPECT_TRUE(on_cpu);
      EXPECT_TRUE(std::get<bool>(op.attrs.at("is_sparse")));
      ++cpu_lookups;
    } else if (op.type == "adam" && op.origin.var.find("table_") == 0) {
      EXPECT_EQ(op.origin.kind, OpOrigin::Kind::kUpdateOf);
      EXPECT_EQ(op.Input("Param"), op.origin.var);
      ++table_updates;
    } else if (op.type == "lookup_table_grad") {
      ASSERT_EQ(op.origin.kind, OpOrigin::Kind::kGradOf);
      EXPECT_EQ(ops[op.origin.op].type, "lookup_table");
      ++lookup_grads;
    } else {
      EXPECT_FALSE(on_cpu) << op.DebugString();  // the dense part: default place
    }
  }
  EXPECT_EQ(cpu_lookups, 3);
  EXPECT_EQ(table_updates, 3);
  EXPECT_EQ(lookup_grads, 3);
}

TEST(CtrModelTest, EvalProgramPredictsTwoClassProbabilities) {
  ProgramBuilder b;
  Adam adam(1e-3);
  ASSERT_OK_AND_ASSIGN(CtrModel m, BuildCtrModel(Small(), &adam, &b));
  std::vector<std::string> types;
  for (const OpDesc& op : m.eval.block().ops()) types.push_back(op.type);
  EXPECT_THAT(types, ElementsAre("lookup_table", "lookup_table", "lookup_table", "concat", "fc",
                                 "relu", "fc", "softmax_with_cross_entropy", "mean"));
  EXPECT_EQ(m.eval.block().FindVar(m.probabilities.name)->shape, Shape({-1, 2}));
}

TEST(CtrModelTest, WithoutTheGuardEverythingIsOnTheDefaultPlace) {
  ProgramBuilder b;
  Adam adam(1e-3);
  CtrModelConfig config = Small();
  config.tables_on_cpu = false;
  ASSERT_OK(BuildCtrModel(config, &adam, &b).status());
  for (const OpDesc& op : b.main_program().block().ops()) {
    EXPECT_EQ(op.op_device, "") << op.DebugString();
  }
}

TEST(CtrModelTest, RejectsBadConfigs) {
  Adam adam(1e-3);
  for (auto mutate :
       std::vector<void (*)(CtrModelConfig*)>{[](CtrModelConfig* c) { c->vocab_sizes = {}; },
                                              [](CtrModelConfig* c) {
                                                c->vocab_sizes = {10, 0};
                                              },
                                              [](CtrModelConfig* c) { c->hidden = {}; },
                                              [](CtrModelConfig* c) { c->embedding_dim = 0; },
                                              [](CtrModelConfig* c) { c->seed = 0; }}) {
    CtrModelConfig config = Small();
    mutate(&config);
    ProgramBuilder b;
    EXPECT_THAT(BuildCtrModel(config, &adam, &b),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ctr model:")));
  }
}

}  // namespace
}  // namespace tandem
