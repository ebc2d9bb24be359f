// The executor on the test devices (cpu, testdev:0, testdev:1;
// framework/testing/fake_devices.h) with test ops registered here: values
// across places, the copies a run makes and what its stats and the
// observer report, persistables across runs, failures, pipelined runs and
// every mode giving the same results. tests/runtime runs real models on the
// asynchronous sim backend.
#include "framework/runtime/executor.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/op/op_schema.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/execution_observer.h"
#include "framework/testing/fake_devices.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::Not;

absl::Status SameAsX(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
  ctx->SetOutput("Out", x);
  return absl::OkStatus();
}

REGISTER_OP("ex_scale").Input("X").Output("Out").Attr<double>("factor", 2.0).SetInferShape(SameAsX);
REGISTER_OP("ex_add").Input("X").Input("Y").Output("Out").SetInferShape(SameAsX);
REGISTER_OP("ex_check_positive").Input("X").Output("Out").SetInferShape(SameAsX);
REGISTER_OP("ex_accumulate")
    .Input("Param")
    .Input("X")
    .Output("ParamOut")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta param, ctx->Input("Param"));
      ctx->SetOutput("ParamOut", param);
      return absl::OkStatus();
    });

// Out[i] = f(inputs[i]) over float32 tensors of one shape.
template <typename F>
absl::Status Elementwise(KernelContext* ctx, const std::vector<std::string>& args,
                         const std::string& out_arg, F f) {
  std::vector<const Tensor*> in;
  for (const std::string& arg : args) {
    ASSIGN_OR_RETURN(const Tensor* t, ctx->InputTensor(arg));
    in.push_back(t);
  }
  ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(out_arg, DataType::kFloat32, in[0]->shape()));
  for (int64_t i = 0; i < out->NumElements(); ++i) {
    std::vector<float> v;
    for (const Tensor* t : in) v.push_back(t->data<float>()[i]);
    ASSIGN_OR_RETURN(out->data<float>()[i], f(v, i));
  }
  return absl::OkStatus();
}

class ScaleKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(double factor, ctx->Attr<double>("factor"));
    return Elementwise(ctx, {"X"}, "Out",
                       [&](const std::vector<float>& v, int64_t) -> absl::StatusOr<float> {
                         return static_cast<float>(v[0] * factor);
                       });
  }
};

class AddKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    return Elementwise(
        ctx, {"X", "Y"}, "Out",
        [](const std::vector<float>& v, int64_t) -> absl::StatusOr<float> { return v[0] + v[1]; });
  }
};

// Fails on a value <= 0 (an input a user can get wrong).
class CheckPositiveKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    return Elementwise(ctx, {"X"}, "Out",
                       [](const std::vector<float>& v, int64_t i) -> absl::StatusOr<float> {
                         if (v[0] > 0) return v[0];
                         return absl::InvalidArgumentError(
                             absl::StrCat("value ", v[0], " at index ", i, " is not positive"));
                       });
  }
};

class AccumulateKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    return Elementwise(
        ctx, {"Param", "X"}, "ParamOut",
        [](const std::vector<float>& v, int64_t) -> absl::StatusOr<float> { return v[0] + v[1]; });
  }
};

REGISTER_KERNEL(KernelDef("ex_scale", "cpu"), ScaleKernel);
REGISTER_KERNEL(KernelDef("ex_scale", "testdev"), ScaleKernel);
REGISTER_KERNEL(KernelDef("ex_add", "cpu"), AddKernel);
REGISTER_KERNEL(KernelDef("ex_add", "testdev"), AddKernel);
REGISTER_KERNEL(KernelDef("ex_check_positive", "testdev"), CheckPositiveKernel);
REGISTER_KERNEL(KernelDef("ex_accumulate", "testdev"), AccumulateKernel);

const Place kDev0 = TestDevPlace(0);
const Place kDev1 = TestDevPlace(1);

Var Op(ProgramBuilder* b, const std::string& type, std::map<std::string, std::vector<Var>> in,
       AttrMap attrs = {}) {
  auto out = b->AppendOp(type, in, std::move(attrs), {"Out"});
  return out.empty() ? Var{} : out["Out"][0];
}

Tensor Floats(const std::vector<double>& v) {
  return MakeTensor(DataType::kFloat32, Shape({static_cast<int64_t>(v.size())}), v);
}

// y = 3 x on the device, z = y + x on the host, w = 2 z on the device.
struct CrossPlaceProgram {
  ProgramBuilder b;
  Var x, y, z, w;
  CrossPlaceProgram() {
    x = b.Data("x", DataType::kFloat32, Shape({4}));
    y = Op(&b, "ex_scale", {{"X", {x}}}, {{"factor", 3.0}});
    {
      auto guard = b.device_guard("cpu");
      z = Op(&b, "ex_add", {{"X", {y}}, {"Y", {x}}});
    }
    w = Op(&b, "ex_scale", {{"X", {z}}});
    CHECK(b.status().ok()) << b.status();
  }
};

struct Mode {
  const char* name;
  bool in_order;
  int host_workers;
};
const Mode kModes[] = {{"in_order", true, 1}, {"concurrent", false, 1}, {"workers", false, 3}};

ExecutorOptions OptionsFor(const Mode& mode) {
  ExecutorOptions options;
  options.in_order = mode.in_order;
  options.host_workers = mode.host_workers;
  return options;
}

TEST(Executor, ComputesAcrossPlacesWithTheCopiesThePlacementNeeds) {
  for (const Mode& mode : kModes) {
    SCOPED_TRACE(mode.name);
    CrossPlaceProgram p;
    Executor exe(kDev0, OptionsFor(mode));
    Scope scope;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                         exe.Prepare(p.b.main_program(), scope, {"x"}, {p.z.name, p.w.name}));
    FakeDeviceCounters::Reset();
    RunStats stats;
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         exe.Run(plan.get(), &scope, {{"x", Floats({1, 2, 3, -4})}}, &stats));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_THAT(ToDoubles(out[0]), ElementsAre(4, 8, 12, -16));
    EXPECT_THAT(ToDoubles(out[1]), ElementsAre(8, 16, 24, -32));
    for (const Tensor& t : out) EXPECT_EQ(t.place(), CPUPlace());  // fetches come to the host

    // x goes up once, y down, z up again; w comes down as a fetch.
    EXPECT_EQ(stats.ops, 3);
    EXPECT_EQ(stats.copies_h2d, 2);
    EXPECT_EQ(stats.copies_d2h, 1);
    EXPECT_EQ(stats.bytes_h2d, 32);
    EXPECT_EQ(stats.bytes_d2h, 16);
    EXPECT_EQ(stats.sync_copies, 1);
    EXPECT_EQ(stats.async_copies, 2);
    EXPECT_EQ(stats.fetch_copies, 1);
    EXPECT_EQ(stats.fetch_bytes, 16);
    ASSERT_EQ(stats.ledger.size(), 3u);
    EXPECT_EQ(stats.ledger[0].var, "x");
    EXPECT_EQ(stats.ledger[0].from, CPUPlace());
    EXPECT_EQ(stats.ledger[0].to, kDev0);
    EXPECT_EQ(stats.ledger[0].consumer, "ex_scale");
    EXPECT_EQ(stats.ledger[1].var, p.y.name);
    EXPECT_EQ(stats.ledger[1].to, CPUPlace());
    EXPECT_TRUE(stats.ledger[1].sync);
    EXPECT_EQ(stats.ledger[1].consumer, "ex_add");
    EXPECT_EQ(
        stats.ledger[1].reason,
        absl::StrCat("variable '", p.y.name, "' is on testdev:0; op 'ex_add' (#1) reads X on cpu"));
    // The device was asked for exactly those copies.
    EXPECT_EQ(FakeDeviceCounters::Get(CopyKind::kHostToDevice).copies, 2);
    EXPECT_EQ(FakeDeviceCounters::Get(CopyKind::kHostToDevice).bytes, 32);
    EXPECT_EQ(FakeDeviceCounters::Get(CopyKind::kDeviceToHost).copies, 2);
    EXPECT_EQ(FakeDeviceCounters::Get(CopyKind::kDeviceToDevice).copies, 0);
  }
}

TEST(Executor, EveryRunOfAPlanReadsItsOwnFeeds) {
  CrossPlaceProgram p;
  Executor exe(kDev0);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(p.b.main_program(), scope, {"x"}, {p.w.name}));
  for (int run = 1; run <= 3; ++run) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         exe.Run(plan.get(), &scope, {{"x", Floats({1.0 * run, 0, 0, 0})}}));
    EXPECT_THAT(ToDoubles(out[0]), ElementsAre(8 * run, 0, 0, 0));
  }
}

TEST(Executor, PersistableUpdatedOnTheDeviceIsBackInTheScopeAfterEachRun) {
  for (const Mode& mode : kModes) {
    SCOPED_TRACE(mode.name);
    ProgramBuilder b;
    Var x = b.Data("x", DataType::kFloat32, Shape({3}));
    VarDesc w{"w", DataType::kFloat32, Shape({3})};
    w.persistable = true;
    ASSERT_OK(b.main_program().block().AddVar(w));
    OpDesc update;  // in place, as the optimizers append their updates
    update.type = "ex_accumulate";
    update.inputs = {{"Param", {"w"}}, {"X", {x.name}}};
    update.outputs = {{"ParamOut", {"w"}}};
    b.main_program().block().AppendOp(update);
    ASSERT_OK(b.status());
    Scope scope;
    scope.Var("w")->set(Floats({1, 10, 100}));
    Executor exe(kDev0, OptionsFor(mode));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                         exe.Prepare(b.main_program(), scope, {"x"}, {}));
    RunStats stats;
    for (int run = 0; run < 3; ++run) {
      ASSERT_OK(exe.Run(plan.get(), &scope, {{"x", Floats({1, 2, 3})}}, &stats).status());
    }
    const Tensor& after = scope.Find("w")->tensor();
    EXPECT_EQ(after.place(), CPUPlace());  // written back where it lives
    EXPECT_THAT(ToDoubles(after), ElementsAre(4, 16, 109));
    // Each run: w and x up, w back down.
    EXPECT_EQ(stats.copies_h2d, 2);
    EXPECT_EQ(stats.copies_d2h, 1);
    EXPECT_EQ(stats.ledger.back().reason,
              "persistable 'w' was updated on testdev:0; it lives on cpu");
  }
}

// A planner's homes (PlacedProgram::homes) are where each run starts:
// MovePersistablesHome brings a persistable there from the host, from a
// device, and from another device through the host.
TEST(Executor, MovePersistablesHomeMovesBetweenAnyTwoPlaces) {
  PlacedProgram placed;
  placed.homes = {{"up", kDev0}, {"down", CPUPlace()}, {"across", kDev1}, {"stays", kDev0}};
  Scope scope;
  scope.Var("up")->set(Floats({1, 2}));
  ASSERT_OK_AND_ASSIGN(Tensor on_dev0, CopyTensorTo(Floats({3, 4}), kDev0));
  scope.Var("down")->set(on_dev0);
  ASSERT_OK_AND_ASSIGN(Tensor across, CopyTensorTo(Floats({5, 6}), kDev0));
  scope.Var("across")->set(across);
  ASSERT_OK_AND_ASSIGN(Tensor stays, CopyTensorTo(Floats({7}), kDev0));
  scope.Var("stays")->set(stays);
  ASSERT_OK(MovePersistablesHome(placed, &scope));
  for (const auto& [name, place, values] :
       std::vector<std::tuple<std::string, Place, std::vector<double>>>{
           {"up", kDev0, {1, 2}},
           {"down", CPUPlace(), {3, 4}},
           {"across", kDev1, {5, 6}},
           {"stays", kDev0, {7}}}) {
    const Tensor& t = scope.Find(name)->tensor();
    EXPECT_EQ(t.place(), place) << name;
    ASSERT_OK_AND_ASSIGN(Tensor host, CopyTensorTo(t, CPUPlace()));
    EXPECT_EQ(ToDoubles(host), values) << name;
  }
  EXPECT_EQ(scope.Find("stays")->tensor().data<float>(), stays.data<float>());  // not copied
}

TEST(Executor, FailingKernelNamesItsOpAndThePlanRunsAgain) {
  for (const Mode& mode : kModes) {
    SCOPED_TRACE(mode.name);
    ProgramBuilder b;
    Var x = b.Data("x", DataType::kFloat32, Shape({3}));
    Var checked = Op(&b, "ex_check_positive", {{"X", {x}}});
    Var out = Op(&b, "ex_scale", {{"X", {checked}}});
    Executor exe(kDev0, OptionsFor(mode));
    Scope scope;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                         exe.Prepare(b.main_program(), scope, {"x"}, {out.name}));
    // Placed program: #0 the upload of x, #1 the check, #2 the scale.
    EXPECT_THAT(exe.Run(plan.get(), &scope, {{"x", Floats({1, -2, 3})}}).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("op 'ex_check_positive' (#1) on testdev:0: value -2 at index 1 "
                                   "is not positive")));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> good,
                         exe.Run(plan.get(), &scope, {{"x", Floats({1, 2, 3})}}));
    EXPECT_THAT(ToDoubles(good[0]), ElementsAre(2, 4, 6));
  }
}

TEST(Executor, BadFeedsFetchesAndOpsAreRefused) {
  CrossPlaceProgram p;
  Executor exe(kDev0);
  Scope scope;
  EXPECT_THAT(
      exe.Prepare(p.b.main_program(), scope, {}, {p.w.name}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(
                   "op 'ex_scale' (#0) reads 'x' (argument X) before it has a value: no earlier op "
                   "writes it and it is not fed")));
  EXPECT_THAT(exe.Prepare(p.b.main_program(), scope, {"x"}, {"nope"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fetch 'nope' is not a program variable")));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(p.b.main_program(), scope, {"x"}, {p.w.name}));
  EXPECT_THAT(exe.Run(plan.get(), &scope, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("feed 'x' was not given")));

  Program unknown;
  ASSERT_OK(unknown.block().AddVar(VarDesc{"a", DataType::kFloat32, Shape({1})}));
  OpDesc op;
  op.type = "ex_no_schema";
  op.outputs["Out"] = {"a"};
  unknown.block().AppendOp(op);
  EXPECT_THAT(exe.Prepare(unknown, scope, {}, {"a"}).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("ex_no_schema")));
}

TEST(Executor, PipelinedRunsKeepTheirOwnResults) {
  CrossPlaceProgram p;
  ExecutorOptions options;
  options.host_workers = 2;
  Executor exe(kDev0, options);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(p.b.main_program(), scope, {"x"}, {p.w.name}));
  std::vector<RunHandle> handles;
  for (int run = 1; run <= 4; ++run) {
    ASSERT_OK_AND_ASSIGN(RunHandle h,
                         exe.RunAsync(plan.get(), &scope, {{"x", Floats({1.0 * run, 1, 2, 3})}}));
    handles.push_back(std::move(h));
  }
  for (int run = 1; run <= 4; ++run) {
    RunStats stats;
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, handles[run - 1].Wait(&stats));
    EXPECT_THAT(ToDoubles(out[0]), ElementsAre(8 * run, 8, 16, 24)) << "run " << run;
    EXPECT_EQ(stats.copies(), 3);
  }
  EXPECT_THAT(handles[0].Wait().status(), StatusIs(absl::StatusCode::kFailedPrecondition));
}

// The schedule trial (short phases here) switches pipelined runs between
// in-order and concurrent ones: each run keeps its own results, and the
// choice shows in the placement table once made, never when disabled.
TEST(Executor, TheScheduleTrialSwitchesSchedulesKeepingResultsAndReportsItsChoice) {
  for (const bool enabled : {true, false}) {
    SCOPED_TRACE(enabled ? "trial" : "no trial");
    CrossPlaceProgram p;
    ExecutorOptions options;
    options.host_workers = 2;
    options.schedule_trial = {
        .enabled = enabled, .warmup_runs = 1, .runs_per_phase = 2, .rounds = 2};
    Executor exe(kDev0, options);
    Scope scope;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                         exe.Prepare(p.b.main_program(), scope, {"x"}, {p.w.name}));
    EXPECT_THAT(plan->PlacementTable(), Not(HasSubstr("schedule chosen")));
    // Warm-up, four phases of two runs, the deciding run and one after.
    std::optional<RunHandle> before;
    for (int run = 1; run <= 11; ++run) {
      ASSERT_OK_AND_ASSIGN(RunHandle h,
                           exe.RunAsync(plan.get(), &scope, {{"x", Floats({1.0 * run, 1, 2, 3})}}));
      if (before.has_value()) {
        ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, before->Wait());
        EXPECT_THAT(ToDoubles(out[0]), ElementsAre(8 * (run - 1), 8, 16, 24)) << "run " << run - 1;
      }
      before = std::move(h);
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, before->Wait());
    EXPECT_THAT(ToDoubles(out[0]), ElementsAre(88, 8, 16, 24));
    if (enabled) {
      EXPECT_THAT(plan->PlacementTable(),
                  ContainsRegex("schedule chosen by timing runs: (in order|concurrent): [0-9.]+ "
                                "vs [0-9.]+ ms per run (concurrently|in order) \\(medians of [12] "
                                "phases? of 2 runs each\\)"));
    } else {
      EXPECT_THAT(plan->PlacementTable(), Not(HasSubstr("schedule chosen")));
    }
  }
}

// Records every op and copy the executor reports, in order.
class RecordingObserver : public ExecutionObserver {
 public:
  void OnOpBegin(const OpEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    open_ += 1;
  }
  void OnOpEnd(const OpEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    open_ -= 1;
    events.push_back(
        absl::StrCat(e.index, " ", e.op->type, " @", e.place.ToString(),
                     e.is_copy ? absl::StrCat(" ", e.var, " ", e.bytes, "B") : "",
                     e.dtype.has_value() ? absl::StrCat(" ", DataTypeName(*e.dtype)) : ""));
  }
  void OnRunEnd(const RunStats& stats) override { runs_ended += 1; }
  std::vector<std::string> events;
  int runs_ended = 0;
  int open_ = 0;

 private:
  std::mutex mu_;
};

TEST(Executor, ObserverSeesEveryOpAndCopyInProgramOrderInOrderMode) {
  CrossPlaceProgram p;
  ExecutorOptions options;
  options.in_order = true;
  Executor exe(kDev0, options);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(p.b.main_program(), scope, {"x"}, {p.w.name}));
  RecordingObserver observer;
  SetExecutionObserver(&observer);
  absl::Status s = exe.Run(plan.get(), &scope, {{"x", Floats({1, 2, 3, 4})}}).status();
  SetExecutionObserver(nullptr);
  ASSERT_OK(s);
  EXPECT_THAT(observer.events, ElementsAreArray(std::vector<std::string>{
                                   "0 memcpy_h2d @testdev:0 x 16B", "1 ex_scale @testdev:0 float32",
                                   absl::StrCat("2 memcpy_d2h @testdev:0 ", p.y.name, " 16B"),
                                   "3 ex_add @cpu float32",
                                   absl::StrCat("4 memcpy_h2d @testdev:0 ", p.z.name, " 16B"),
                                   "5 ex_scale @testdev:0 float32"}));
  EXPECT_EQ(observer.open_, 0);
  EXPECT_EQ(observer.runs_ended, 1);
}

// Records which host worker began each op (-1: the dispatching thread).
class WorkerObserver : public ExecutionObserver {
 public:
  void OnOpBegin(const OpEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    workers.push_back(e.worker);
  }
  std::vector<int> workers;

 private:
  std::mutex mu_;
};

// A host-only chain has nothing to overlap: with several workers it still
// runs on the calling thread, in order. Independent host branches still go
// to the workers; both give the in-order results.
TEST(Executor, AHostChainRunsOnTheCallingThreadAndBranchesOnTheWorkers) {
  ProgramBuilder chain_b, branches_b;
  Var x = chain_b.Data("x", DataType::kFloat32, Shape({2}));
  Var h = x;
  for (int i = 0; i < 6; ++i) h = Op(&chain_b, "ex_scale", {{"X", {h}}});
  Var y = branches_b.Data("x", DataType::kFloat32, Shape({2}));
  std::vector<Var> ends;
  for (int branch = 0; branch < 4; ++branch) {
    Var v = y;
    for (int i = 0; i < 3; ++i) v = Op(&branches_b, "ex_scale", {{"X", {v}}});
    ends.push_back(v);
  }
  Var sum = Op(&branches_b, "ex_add", {{"X", {ends[0]}}, {"Y", {ends[1]}}});
  ASSERT_OK(chain_b.status());
  ASSERT_OK(branches_b.status());
  ExecutorOptions options;
  options.host_workers = 3;
  Executor exe(CPUPlace(), options);
  Scope scope;
  for (auto [b, out, expected] :
       {std::make_tuple(&chain_b, h, 64.0f), std::make_tuple(&branches_b, sum, 16.0f)}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                         exe.Prepare(b->main_program(), scope, {"x"}, {out.name}));
    WorkerObserver observer;
    SetExecutionObserver(&observer);
    std::vector<float> got;
    for (int run = 0; run < 3; ++run) {
      absl::StatusOr<std::vector<Tensor>> r = exe.Run(plan.get(), &scope, {{"x", Floats({1, 2})}});
      ASSERT_OK(r.status());
      got.push_back((*r)[0].data<float>()[1]);
    }
    SetExecutionObserver(nullptr);
    EXPECT_THAT(got, ElementsAre(2 * expected, 2 * expected, 2 * expected));
    const bool on_workers =
        std::any_of(observer.workers.begin(), observer.workers.end(), [](int w) { return w >= 0; });
    EXPECT_EQ(on_workers, b == &branches_b) << (b == &chain_b ? "chain" : "branches");
  }
}

TEST(Executor, PlacementTableOfThePlan) {
  CrossPlaceProgram p;
  Executor exe(kDev0);
  Scope scope;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(p.b.main_program(), scope, {"x"}, {p.w.name}));
  EXPECT_EQ(plan->placed().num_copies, 3);
  EXPECT_THAT(plan->PlacementTable(), HasSubstr("3 ops, 3 copies\n"));
  EXPECT_EQ(exe.default_place(), kDev0);
}

}  // namespace
}  // namespace tandem
