#include "framework/parallel/replicate.h"

#include <string>
#include <vector>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

OpDesc Op(const std::string& type, std::map<std::string, std::vector<std::string>> in,
          std::map<std::string, std::vector<std::string>> out, OpRole role = OpRole::kForward,
          OpOrigin origin = {}) {
  OpDesc op;
  op.type = type;
  op.inputs = std::move(in);
  op.outputs = std::move(out);
  op.role = role;
  op.origin = std::move(origin);
  return op;
}

// A table looked up on the host, two dense layers, their gradients and SGD.
struct Programs {
  Program main, startup;
};

Programs Make() {
  Programs p;
  Block& b = p.main.block();
  for (auto [name, shape] : std::vector<std::pair<std::string, Shape>>{
           {"table", Shape({50, 4})}, {"w1", Shape({4, 100})}, {"w2", Shape({100, 2})}}) {
    EXPECT_OK(
        b.AddVar({name, DataType::kFloat32, shape, /*persistable=*/true, /*is_parameter=*/true}));
    VarDesc g{name + "@GRAD", DataType::kFloat32, shape};
    if (name == "table") g.kind = VarKind::kSelectedRows;
    EXPECT_OK(b.AddVar(g));
    EXPECT_OK(p.startup.block().AddVar({name, DataType::kFloat32, shape, true, true}));
    p.startup.block().AppendOp(Op("uniform_random", {}, {{"Out", {name}}}));
  }
  EXPECT_OK(b.AddVar({"lr", DataType::kFloat32, Shape({1}), true}));
  OpDesc lookup = Op("lookup_table", {{"W", {"table"}}, {"Ids", {"ids"}}}, {{"Out", {"emb"}}});
  lookup.op_device = "cpu";
  b.AppendOp(lookup);                                                            // 0
  b.AppendOp(Op("matmul", {{"X", {"emb"}}, {"Y", {"w1"}}}, {{"Out", {"h"}}}));   // 1
  b.AppendOp(Op("matmul", {{"X", {"h"}}, {"Y", {"w2"}}}, {{"Out", {"loss"}}}));  // 2
  const OpRole bw = OpRole::kBackward;
  b.AppendOp(Op("matmul_grad", {{"Y", {"w2"}}}, {{"Y@GRAD", {"w2@GRAD"}}, {"X@GRAD", {"h@GRAD"}}},
                bw, {OpOrigin::Kind::kGradOf, 2, ""}));  // 3
  b.AppendOp(Op("matmul_grad", {{"Y", {"w1"}}}, {{"Y@GRAD", {"w1@GRAD"}}}, bw,
                {OpOrigin::Kind::kGradOf, 1, ""}));  // 4
  b.AppendOp(Op("lookup_table_grad", {{"W", {"table"}}}, {{"W@GRAD", {"table@GRAD"}}}, bw,
                {OpOrigin::Kind::kGradOf, 0, ""}));  // 5
  for (const char* w : {"w2", "w1", "table"}) {
    b.AppendOp(Op("sgd",
                  {{"Param", {w}}, {"Grad", {std::string(w) + "@GRAD"}}, {"LearningRate", {"lr"}}},
                  {{"ParamOut", {w}}}, OpRole::kOptimize, {OpOrigin::Kind::kUpdateOf, -1, w}));
  }
  return p;
}

std::vector<std::string> Types(const Program& p) {
  std::vector<std::string> t;
  for (const OpDesc& op : p.block().ops()) t.push_back(op.type);
  return t;
}

TEST(Replicate, BucketsSharedTableAndBroadcasts) {
  const Programs p = Make();
  ReplicateOptions o;
  o.nranks = 2;
  o.ring_id = 7;
  o.bucket_bytes = 100;  // w2's 800 bytes close a bucket; w1's 1600 another
  ASSERT_OK_AND_ASSIGN(ReplicatedPrograms r, ReplicateForDataParallel(p.main, p.startup, o));
  EXPECT_EQ(r.shared, std::vector<std::string>{"table"});
  EXPECT_EQ(r.buckets, (std::vector<std::vector<std::string>>{{"w2@GRAD"}, {"w1@GRAD"}}));
  EXPECT_EQ(Types(r.main[0]),
            (std::vector<std::string>{"lookup_table", "matmul", "matmul", "matmul_grad",
                                      "c_allreduce_sum", "matmul_grad", "c_allreduce_sum",
                                      "lookup_table_grad", "c_allgather", "sgd", "sgd", "sgd"}));
  // Rank 1 does not update the table rank 0 holds for it.
  EXPECT_EQ(Types(r.main[1]),
            (std::vector<std::string>{"lookup_table", "matmul", "matmul", "matmul_grad",
                                      "c_allreduce_sum", "matmul_grad", "c_allreduce_sum",
                                      "lookup_table_grad", "c_allgather", "sgd", "sgd"}));
  const OpDesc& ar = r.main[1].block().ops()[4];
  EXPECT_EQ(ar.inputs.at("X"), std::vector<std::string>{"w2@GRAD"});
  EXPECT_EQ(ar.outputs.at("Out"), std::vector<std::string>{"w2@GRAD"});  // in place
  EXPECT_EQ(std::get<double>(ar.attrs.at("scale")), 0.5);
  EXPECT_EQ(std::get<int64_t>(ar.attrs.at("ring_id")), 7);
  EXPECT_EQ(std::get<int64_t>(ar.attrs.at("rank")), 1);
  EXPECT_EQ(ar.origin.kind, OpOrigin::Kind::kUpdateOf);  // placed with w2
  const OpDesc& gather = r.main[0].block().ops()[8];
  EXPECT_EQ(gather.op_device, "cpu");
  EXPECT_EQ(gather.outputs.at("Out"), std::vector<std::string>{"table@GRAD@ALLGATHER"});
  EXPECT_EQ(r.main[0].block().FindVar("table@GRAD@ALLGATHER")->kind, VarKind::kSelectedRows);
  EXPECT_EQ(r.main[0].block().ops()[11].inputs.at("Grad"),
            std::vector<std::string>{"table@GRAD@ALLGATHER"});
  // Origins still point at the forward ops.
  EXPECT_EQ(r.main[0].block().ops()[5].origin.op, 1);
  EXPECT_EQ(r.main[0].block().ops()[7].origin.op, 0);
  // Startup: rank 1 does not initialise the table; both broadcast w1, w2.
  EXPECT_EQ(Types(r.startup[0]),
            (std::vector<std::string>{"uniform_random", "uniform_random", "uniform_random",
                                      "c_broadcast", "c_broadcast"}));
  EXPECT_EQ(Types(r.startup[1]), (std::vector<std::string>{"uniform_random", "uniform_random",
                                                           "c_broadcast", "c_broadcast"}));
}

TEST(Replicate, OneBucketWhenLargeAndErrors) {
  const Programs p = Make();
  ReplicateOptions o;
  o.nranks = 4;
  ASSERT_OK_AND_ASSIGN(ReplicatedPrograms r, ReplicateForDataParallel(p.main, p.startup, o));
  EXPECT_EQ(r.buckets, (std::vector<std::vector<std::string>>{{"w2@GRAD", "w1@GRAD"}}));
  EXPECT_EQ(r.main.size(), 4u);
  o.bucket_bytes = 0;
  EXPECT_THAT(ReplicateForDataParallel(p.main, p.startup, o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bucket_bytes 0")));
  Programs unpinned = Make();
  unpinned.main.block().mutable_ops()[0].op_device = "";
  o.bucket_bytes = 100;
  EXPECT_THAT(ReplicateForDataParallel(unpinned.main, unpinned.startup, o).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("'table' has a sparse gradient but is read on 'the default "
                                 "place'")));
  Program no_updates;
  EXPECT_THAT(ReplicateForDataParallel(no_updates, p.startup, o).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no update op")));
}

}  // namespace
}  // namespace tandem
