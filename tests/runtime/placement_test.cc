// Placement, copy insertion and execution on the sim place (no GPU needed).
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

const Place kSim0 = *ParsePlace("sim:0");

FeedMap XFeed() { return {{"x", MakeTensor(DataType::kFloat32, {2, 2}, {1, 2, 3, 4})}}; }

TEST(Placement, DefaultDeviceOpCopiesTheFeedOnce) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.Scale(x, 2.0);
  Var z = b.Scale(x, 3.0);  // second reader of x on sim: reuses the copy
  Var s = b.ElementwiseAdd(y, z);
  ASSERT_OK(b.status());
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {s.name}));
  for (int run = 0; run < 3; ++run) {
    RunStats stats;
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope, XFeed(), &stats));
    EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{5, 10, 15, 20}));
    EXPECT_EQ(stats.copies_h2d, 1);
    EXPECT_EQ(stats.bytes_h2d, 16);
    EXPECT_EQ(stats.copies_d2h, 0);
    EXPECT_EQ(stats.fetch_copies, 1);
    EXPECT_EQ(stats.ops, 3);
    ASSERT_EQ(stats.ledger.size(), 1u);
    EXPECT_EQ(stats.ledger[0].var, "x");
    EXPECT_EQ(stats.ledger[0].to, kSim0);
  }
  const std::string table = plan->PlacementTable();
  EXPECT_THAT(table, AllOf(HasSubstr("memcpy_h2d"), HasSubstr("sim:0"), HasSubstr("copy"),
                           HasSubstr("3 ops"), HasSubstr("1 copies")));
  EXPECT_EQ(plan->placed().program.block().ops()[0].Input("X"), "x");
  EXPECT_EQ(plan->placed().program.block().ops()[0].Output("Out"), "x@sim:0");
}

TEST(Placement, GuardedOpsNeedNoCopies) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y;
  {
    auto g = b.device_guard("cpu");
    y = b.Scale(x, 2.0);
  }
  Executor exe(kSim0);
  Scope scope;
  RunStats stats;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       exe.Run(b.main_program(), &scope, XFeed(), {y.name}, &stats));
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{2, 4, 6, 8}));
  EXPECT_EQ(stats.copies(), 0);
  EXPECT_EQ(stats.fetch_copies, 0);
}

TEST(Placement, HostToDeviceAndBackCountsBothDirections) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.Scale(x, 2.0);  // sim
  Var z;
  {
    auto g = b.device_guard("cpu");
    z = b.Scale(y, 1.0);    // cpu: needs y back
  }
  Executor exe(kSim0);
  Scope scope;
  RunStats stats;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       exe.Run(b.main_program(), &scope, XFeed(), {z.name}, &stats));
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{2, 4, 6, 8}));
  EXPECT_EQ(stats.copies_h2d, 1);
  EXPECT_EQ(stats.copies_d2h, 1);
  EXPECT_EQ(stats.bytes_d2h, 16);
  EXPECT_EQ(stats.sync_copies, 2);
}

TEST(Placement, DisallowPolicyNamesVariableOpAndDirection) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  {
    auto p = b.transfer_policy(TransferPolicy::kDisallow);
    b.Scale(x, 2.0);
  }
  Executor exe(kSim0);
  Scope scope;
  EXPECT_THAT(exe.Prepare(b.main_program(), scope, {"x"}, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("'disallow' forbids a host->device copy"),
                             HasSubstr("variable 'x' is on cpu"), HasSubstr("op 'scale' (#0)"),
                             HasSubstr("on sim:0"))));
  // The same program with the executor's policy set to disallow and no guard.
  ProgramBuilder c;
  Var cx = c.Data("x", DataType::kFloat32, Shape({2, 2}));
  c.Scale(cx, 2.0);
  Executor strict(kSim0, {false, TransferPolicy::kDisallow});
  EXPECT_THAT(strict.Prepare(c.main_program(), scope, {"x"}, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("variable 'x'")));
}

TEST(Placement, NonexistentPlaceIsRejected) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  {
    auto g = b.device_guard("sim:7");
    b.Scale(x, 2.0);
  }
  ASSERT_OK(b.status());
  Executor exe(CPUPlace());
  Scope scope;
  EXPECT_THAT(exe.Prepare(b.main_program(), scope, {"x"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("op 'scale' (#0) placed by device_guard(\"sim:7\")"),
                             HasSubstr("place sim:7 does not exist"))));
}

TEST(Placement, PersistablesStayWhereTheyLive) {
  ProgramBuilder b;
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({2, 2}), Initializer::Constant(1.5));
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.ElementwiseAdd(x, w);
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_NE(scope.Find("w"), nullptr);
  EXPECT_EQ(scope.Find("w")->tensor().place(), kSim0);  // initialised on the default place
  RunStats stats;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       exe.Run(b.main_program(), &scope, XFeed(), {y.name}, &stats));
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{2.5, 3.5, 4.5, 5.5}));
  EXPECT_EQ(stats.copies_h2d, 1);  // only the feed
}

TEST(Placement, FeedErrors) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1, 2}));
  Var y = b.Scale(x, 2.0);
  Executor exe(CPUPlace());
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {y.name}));
  EXPECT_THAT(exe.Run(plan.get(), &scope, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "feed 'x' was not given"));
  EXPECT_THAT(exe.Run(plan.get(), &scope, {{"x", MakeTensor(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6})}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "feed 'x' is float32[2, 3], the program declares float32[-1, 2]"));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       exe.Run(plan.get(), &scope, {{"x", MakeTensor(DataType::kFloat32, {3, 2}, {1, 2, 3, 4, 5, 6})}}));
  EXPECT_EQ(out[0].shape(), Shape({3, 2}));
}

TEST(Placement, VmoduleExecutorLogsInReferenceFormat) {
  FLAGS_logtostderr = true;
  google::SetVLOGLevel("executor", 3);
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.Scale(x, 2.0);
  Executor exe(kSim0);
  Scope scope;
  ::testing::internal::CaptureStderr();
  ASSERT_OK(exe.Run(b.main_program(), &scope, XFeed(), {y.name}).status());
  const std::string log = ::testing::internal::GetCapturedStderr();
  google::SetVLOGLevel("executor", 0);
  EXPECT_THAT(log, HasSubstr("Transform Variable x from data_type[float]:data_layout[NCHW]:"
                             "place[CPUPlace]:library_type[PLAIN] to data_type[float]:"
                             "data_layout[NCHW]:place[SimPlace(0)]:library_type[PLAIN]"));
  EXPECT_THAT(log, HasSubstr("TensorCopySync 2, 2 from CPUPlace to SimPlace(0)"));
  EXPECT_THAT(log, HasSubstr("SimPlace(0) Op(scale), inputs:{X[x@sim:0:float[2, 2]({})"
                             "(Place(sim:0))]}, outputs:{Out[scale_0.tmp_0:float[2, 2]({})"
                             "(Place(sim:0))]}"));
}

}  // namespace
}  // namespace tandem
