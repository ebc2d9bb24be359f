// Placement, copy insertion and execution on the sim place (no GPU needed).
#include "framework/backward/optimizer.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_context.h"
#include "framework/op/op_schema.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "models/ctr/ctr_model.h"

namespace tandem {
namespace {

using ::testing::AllOf;

const Place kSim0 = *ParsePlace("sim:0");

// Out has X's dtype and shape.
absl::Status SameAsX(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  ctx->SetOutput("Out", x);
  return absl::OkStatus();
}

// An op with a CPU kernel only, to exercise the fallback rule.
REGISTER_OP("test_cpu_only").Input("X").Output("Out").SetInferShape(SameAsX);

class NegateKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    for (int64_t i = 0; i < x->NumElements(); ++i) out->data<float>()[i] = -x->data<float>()[i];
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(KernelDef("test_cpu_only", "cpu").TypeConstraint("X", {DataType::kFloat32}),
                NegateKernel);

// An op whose sim kernel reads X and writes Out in host memory, like
// lookup_table_grad's Ids on the gpu.
REGISTER_OP("test_host_arg").Input("X").Output("Out").SetInferShape(SameAsX);
REGISTER_KERNEL(KernelDef("test_host_arg", "sim")
                    .TypeConstraint("X", {DataType::kFloat32})
                    .HostMemory("X")
                    .HostMemory("Out"),
                NegateKernel);

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
    EXPECT_EQ(stats.ledger[0].consumer, "scale");
    EXPECT_THAT(stats.ledger[0].reason, HasSubstr("variable 'x' is on cpu"));
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
    z = b.Scale(y, 1.0);  // cpu: needs y back
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
  EXPECT_EQ(stats.sync_copies, 1);   // device->host: the host waits for the data
  EXPECT_EQ(stats.async_copies, 1);  // host->device: queued on the device stream
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

TEST(Placement, AnExecutorForAHostPlaceThatDoesNotExistNamesItWithItsIndex) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  b.Scale(x, 2.0);
  ASSERT_OK(b.status());
  Executor exe(Place(DeviceType::CPU(), 1));
  Scope scope;
  EXPECT_THAT(exe.Prepare(b.main_program(), scope, {"x"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'scale' (#0) placed by rule 'default' on cpu:1: place cpu:1 "
                                 "does not exist")));
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
  EXPECT_THAT(exe.Run(plan.get(), &scope,
                      {{"x", MakeTensor(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6})}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "feed 'x' is float32[2, 3], the program declares float32[-1, 2]"));
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> out,
      exe.Run(plan.get(), &scope,
              {{"x", MakeTensor(DataType::kFloat32, {3, 2}, {1, 2, 3, 4, 5, 6})}}));
  EXPECT_EQ(out[0].shape(), Shape({3, 2}));
}

TEST(Placement, MissingKernelFallsBackToCpuOrFailsWhenStrict) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.Scale(x, 2.0);                                                   // sim
  Var z = b.AppendOp("test_cpu_only", {{"X", {y}}}, {}, {"Out"})["Out"][0];  // no sim kernel
  Var w = b.Scale(z, 1.0);                                                   // sim again
  ASSERT_OK(b.status());
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {w.name}));
  EXPECT_THAT(plan->PlacementTable(), AllOf(HasSubstr("test_cpu_only          cpu      fallback"),
                                            HasSubstr("fell back to cpu")));
  RunStats stats;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope, XFeed(), &stats));
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{-2, -4, -6, -8}));
  EXPECT_EQ(stats.copies_h2d, 2);  // x to sim, z back to sim
  EXPECT_EQ(stats.copies_d2h, 1);  // y to the cpu kernel

  Executor strict(kSim0, {/*strict_placement=*/true, TransferPolicy::kAllow});
  EXPECT_THAT(
      strict.Prepare(b.main_program(), scope, {"x"}, {w.name}),
      StatusIs(absl::StatusCode::kNotFound, AllOf(HasSubstr("op 'test_cpu_only' (#1) on sim:0"),
                                                  HasSubstr("test_cpu_only on cpu [X: float32]"))));
}

// A HostMemory input whose variable also has a device copy reads the host
// original: no copy back (the embedding-offload workload on the gpu: lookup_table copies the
// fed ids to the device, lookup_table_grad reads them in host memory).
TEST(Placement, HostMemoryInputReadsTheHostOriginalBesideADeviceCopy) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.Scale(x, 2.0);  // sim: x is copied there
  Var z = b.AppendOp("test_host_arg", {{"X", {x}}}, {}, {"Out"})["Out"][0];  // sim, X on the host
  ASSERT_OK(b.status());
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {y.name, z.name}));
  const std::vector<OpDesc>& ops = plan->placed().program.block().ops();
  ASSERT_EQ(ops.size(), 3u);  // memcpy_h2d, scale, test_host_arg
  EXPECT_EQ(ops[2].type, "test_host_arg");
  EXPECT_EQ(ops[2].Input("X"), "x");
  EXPECT_EQ(plan->placed().places[2], kSim0);
  RunStats stats;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope, XFeed(), &stats));
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{2, 4, 6, 8}));
  EXPECT_EQ(ToDoubles(out[1]), (std::vector<double>{-1, -2, -3, -4}));
  EXPECT_EQ(stats.copies_h2d, 1);
  EXPECT_EQ(stats.copies_d2h, 0);
  EXPECT_EQ(stats.fetch_copies, 1);  // y; z is already on the host
}

TEST(Placement, IntermediatesAreFreedAfterTheirLastReader) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({256, 256}));
  Var h = x;
  for (int i = 0; i < 8; ++i) h = b.Scale(h, 1.0);  // 8 intermediates of 256 KiB
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {h.name}));
  ASSERT_OK_AND_ASSIGN(Device * sim, DeviceRegistry::Global().GetDevice(kSim0));
  const int64_t before = sim->allocator()->GetStats().bytes_in_use;
  const Tensor feed = RandomTensor(DataType::kFloat32, {256, 256}, 1);
  ASSERT_OK(exe.Run(plan.get(), &scope, {{"x", feed}}).status());
  const AllocatorStats after = sim->allocator()->GetStats();
  EXPECT_EQ(after.bytes_in_use, before);  // nothing left behind on the device
  // At most the input copy, one live intermediate and the one being
  // written exist at once (plus the fetched value).
  EXPECT_LE(after.peak_bytes_in_use - before, 4 * 256 * 256 * 4);
}

TEST(Placement, VmoduleExecutorLogsInReferenceFormat) {
  FLAGS_logtostderr = true;
  google::SetVLOGLevel("executor", 3);
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.Scale(x, 2.0);
  Var z;
  {
    auto g = b.device_guard("cpu");
    z = b.Scale(y, 1.0);
  }
  Executor exe(kSim0);
  Scope scope;
  ::testing::internal::CaptureStderr();
  ASSERT_OK(exe.Run(b.main_program(), &scope, XFeed(), {z.name}).status());
  const std::string log = ::testing::internal::GetCapturedStderr();
  google::SetVLOGLevel("executor", 0);
  EXPECT_THAT(log, HasSubstr("Transform Variable x from data_type[float]:data_layout[NCHW]:"
                             "place[CPUPlace]:library_type[PLAIN] to data_type[float]:"
                             "data_layout[NCHW]:place[SimPlace(0)]:library_type[PLAIN]"));
  EXPECT_THAT(log, HasSubstr("TensorCopyAsync 2, 2 from CPUPlace to SimPlace(0)"));
  EXPECT_THAT(log, HasSubstr("TensorCopySync 2, 2 from SimPlace(0) to CPUPlace"));
  EXPECT_THAT(log, HasSubstr("Transform Variable scale_0.tmp_0 from data_type[float]:"
                             "data_layout[NCHW]:place[SimPlace(0)]:library_type[PLAIN] to "
                             "data_type[float]:data_layout[NCHW]:place[CPUPlace]"));
  EXPECT_THAT(log, HasSubstr("SimPlace(0) Op(scale), inputs:{X[x@sim:0:float[2, 2]({})"
                             "(Place(sim:0))]}, outputs:{Out[scale_0.tmp_0:float[2, 2]({})"
                             "(Place(sim:0))]}"));
}

// The placement row of the first op of `type` (in the placed program) whose
// input `arg` is `var` (or which derives from `var`: an update op reading a copy).
const PlacementEntry* Row(const PlacedProgram& placed, const std::string& type,
                          const std::string& arg = "", const std::string& var = "") {
  for (size_t i = 0; i < placed.table.size(); ++i) {
    const OpDesc& op = placed.program.block().ops()[i];
    const bool reads = arg.empty() || op.Input(arg) == var || op.origin.var == var;
    if (op.type == type && reads) return &placed.table[i];
  }
  return nullptr;
}

TEST(Placement, GeneratedOpsArePlacedByTheirRules) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({8, 4}));
  Var w1 = b.CreateParameter("w1", DataType::kFloat32, Shape({4, 3}));
  Var h;
  {
    auto g = b.device_guard("cpu");
    h = b.Matmul(x, w1);
  }
  Var w2 = b.CreateParameter("w2", DataType::kFloat32, Shape({3, 1}));
  Var y = b.Matmul(h, w2);
  Var skip = b.Matmul(h, w2, false, false, 2.0);  // h and w2 get two gradient contributions
  Var loss = b.Mean(b.ElementwiseAdd(y, skip));
  Momentum momentum(0.1, 0.9);
  ASSERT_OK(momentum.Minimize(&b, loss));
  PlacerOptions options;
  options.default_place = kSim0;
  options.initial_places = {{"x", CPUPlace()}};
  ASSERT_OK_AND_ASSIGN(PlacedProgram startup, PlaceProgram(b.startup_program(), options));
  for (const PlacementEntry& e : startup.table) {
    const std::string out = startup.program.block().ops()[e.op_index].Output("Out");
    if (out == momentum.learning_rate_var()) {
      EXPECT_EQ(e.cause, PlacementCause::kHostState);
      EXPECT_EQ(e.place, CPUPlace());
    } else if (out == momentum.state_vars("w1").at("velocity")) {
      EXPECT_EQ(e.cause, PlacementCause::kState);
      EXPECT_EQ(e.place, kSim0);  // w1 is initialised on the default place
    }
    options.initial_places[out] = e.place;
  }
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(b.main_program(), options));
  const PlacementEntry* grad = Row(placed, "matmul_grad", "X", "x");
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(grad->cause, PlacementCause::kInherit);
  EXPECT_EQ(grad->place, CPUPlace());
  const PlacementEntry* fill = Row(placed, "fill_constant");
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(fill->cause, PlacementCause::kLossGrad);
  EXPECT_EQ(fill->place, kSim0);
  int sums = 0;
  for (const PlacementEntry& e : placed.table) sums += e.cause == PlacementCause::kGradSum;
  EXPECT_GE(sums, 1);
  const PlacementEntry* update_w1 = Row(placed, "momentum", "Param", "w1");
  const PlacementEntry* update_w2 = Row(placed, "momentum", "Param", "w2");
  ASSERT_NE(update_w1, nullptr);
  ASSERT_NE(update_w2, nullptr);
  EXPECT_EQ(update_w1->cause, PlacementCause::kParam);
  EXPECT_EQ(update_w1->place, CPUPlace());  // w1's first reader runs there
  EXPECT_EQ(update_w2->place, kSim0);
  EXPECT_THAT(placed.TableString(), AllOf(HasSubstr("inherit    gradient of 'matmul' (#0)"),
                                          HasSubstr("param      where 'w1' is read ('matmul' #0)"),
                                          HasSubstr("loss-grad  with the loss op 'mean'")));
}

TEST(Placement, CtrTablesTheirGradientsUpdatesAndStateStayOnTheCpu) {
  CtrModelConfig config;
  config.vocab_sizes = {10, 20};
  config.embedding_dim = 4;
  config.hidden = {8};
  ProgramBuilder b;
  Adam adam(1e-3);
  ASSERT_OK_AND_ASSIGN(CtrModel m, BuildCtrModel(config, &adam, &b));
  PlacerOptions options;
  options.default_place = kSim0;
  ASSERT_OK_AND_ASSIGN(PlacedProgram startup, PlaceProgram(b.startup_program(), options));
  for (const PlacementEntry& e : startup.table) {
    const std::string out = startup.program.block().ops()[e.op_index].Output("Out");
    const bool table_or_its_state = out.find("table_") == 0;
    EXPECT_EQ(e.place,
              table_or_its_state || e.cause == PlacementCause::kHostState ? CPUPlace() : kSim0)
        << out;
    options.initial_places[out] = e.place;
  }
  for (const Var& ids : m.ids) options.initial_places[ids.name] = CPUPlace();
  options.initial_places[m.label.name] = CPUPlace();
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(b.main_program(), options));
  int on_cpu = 0;
  for (size_t i = 0; i < placed.table.size(); ++i) {
    const OpDesc& op = placed.program.block().ops()[i];
    const bool table_op = op.type == "lookup_table" || op.type == "lookup_table_grad" ||
                          (op.type == "adam" && op.Input("Param").find("table_") == 0);
    if (!table_op) continue;
    EXPECT_EQ(placed.places[i], CPUPlace()) << op.DebugString();
    ++on_cpu;
  }
  EXPECT_EQ(on_cpu, 2 * 3);
}

TEST(Placement, CopiesAreTypedWithTheirConsumer) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.Scale(x, 2.0);
  ASSERT_OK(b.status());
  PlacerOptions options;
  options.default_place = kSim0;
  options.initial_places = {{"x", CPUPlace()}};
  ASSERT_OK_AND_ASSIGN(PlacedProgram placed, PlaceProgram(b.main_program(), options));
  ASSERT_EQ(placed.table.size(), 2u);
  ASSERT_TRUE(placed.is_copy(0));
  EXPECT_FALSE(placed.is_copy(1));
  const CopyStep& c = *placed.table[0].copy;
  EXPECT_EQ(c.var, "x");
  EXPECT_EQ(c.source, "x");
  EXPECT_EQ(c.output, "x@sim:0");
  EXPECT_EQ(c.from, CPUPlace());
  EXPECT_EQ(c.to, kSim0);
  EXPECT_EQ(c.consumer, 1);
  EXPECT_EQ(c.consumer_type, "scale");
  EXPECT_EQ(c.consumer_arg, "X");
  EXPECT_EQ(placed.table[0].cause, PlacementCause::kCopy);
  EXPECT_TRUE(placed.program.block().ops()[0].attrs.empty());  // typed, not attributes
  EXPECT_EQ(placed.source_ops, (std::vector<int>{-1, 0}));
  (void)y;
}

}  // namespace
}  // namespace tandem
