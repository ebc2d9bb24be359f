// Run sequences as users write them, each against the in-order reference:
// a parameter that lives on the host and is updated on a device, pipelined
// sparse tables with several host workers, a plan that outlives its
// executor, a feed tensor refilled after RunAsync, bad feeds on a plan's
// first RunAsync, handles dropped or waited in reverse order, one plan over
// two scopes in turn. Each works exactly or fails with a clear error.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "framework/backward/optimizer.h"
#include "framework/device/device.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/execution_observer.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/embedding/embedding_model.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

const Place kSim0 = *ParsePlace("sim:0");

// sim:0, and gpu:0 where this machine has one: each test runs on both.
std::vector<Place> DevicePlaces() {
  std::vector<Place> places = {kSim0};
  const Place gpu = *ParsePlace("gpu:0");
  if (DeviceRegistry::Global().GetDevice(gpu).ok()) places.push_back(gpu);
  return places;
}

std::string HostBytes(const Tensor &t) {
  absl::StatusOr<Tensor> host = CopyTensorTo(t, CPUPlace());
  CHECK(host.ok()) << host.status();
  return std::string(static_cast<const char *>(host->raw_data()), host->NumBytes());
}

Tensor Int64s(const std::vector<int64_t> &v) {
  Tensor t = *Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64,
                               Shape({static_cast<int64_t>(v.size())}));
  std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

Tensor Floats(const Shape &shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t = *Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Every scope variable, as bytes on the host.
std::map<std::string, std::string> ScopeBytes(const Scope &scope) {
  std::map<std::string, std::string> out;
  for (const std::string &name : scope.Names()) {
    const Tensor *t = scope.Find(name)->data_tensor();
    if (t != nullptr && t->initialized()) out[name] = HostBytes(*t);
  }
  return out;
}

// A training program and its feeds per step.
struct Workload {
  ProgramBuilder builder;
  std::vector<std::string> feed_names, fetches;
  std::function<FeedMap(int step)> feeds;
};

struct Outcome {
  std::vector<std::string> fetched;  // every fetch of every step
  std::map<std::string, std::string> scope;
};

// `steps` runs: Run each (pipelined = false) or RunAsync of step n + 1
// before Wait of step n.
Outcome Train(Workload &w, const Place &place, ExecutorOptions options, bool pipelined, int steps) {
  Executor exe(place, options);
  Scope scope;
  Outcome out;
  EXPECT_OK(exe.Run(w.builder.startup_program(), &scope).status());
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches);
  EXPECT_OK(plan.status());
  if (!plan.ok()) return out;
  std::optional<RunHandle> in_flight;
  auto collect = [&](RunHandle &h) {
    absl::StatusOr<std::vector<Tensor>> got = h.Wait();
    EXPECT_OK(got.status());
    if (!got.ok()) return;
    for (const Tensor &t : *got) out.fetched.push_back(HostBytes(t));
  };
  for (int step = 0; step < steps; ++step) {
    absl::StatusOr<RunHandle> started = exe.RunAsync(plan->get(), &scope, w.feeds(step));
    EXPECT_OK(started.status());
    if (!started.ok()) return out;
    if (!pipelined) {
      collect(*started);
      continue;
    }
    if (in_flight.has_value()) collect(*in_flight);
    in_flight = *std::move(started);
  }
  if (in_flight.has_value()) collect(*in_flight);
  out.scope = ScopeBytes(scope);
  return out;
}

void ExpectSame(const Outcome &expected, const Outcome &got) {
  ASSERT_FALSE(expected.fetched.empty());
  EXPECT_EQ(expected.fetched, got.fetched);
  ASSERT_FALSE(expected.scope.empty());
  EXPECT_EQ(expected.scope.size(), got.scope.size());
  for (const auto &[name, bytes] : expected.scope) {
    auto it = got.scope.find(name);
    ASSERT_NE(it, got.scope.end()) << name;
    EXPECT_TRUE(it->second == bytes) << "variable '" << name << "' differs";
  }
}

ExecutorOptions InOrder() {
  ExecutorOptions o;
  o.in_order = true;
  return o;
}

ExecutorOptions Workers(int n) {
  ExecutorOptions o;
  o.host_workers = n;
  return o;
}

class RunSequences : public ::testing::TestWithParam<Place> {};

// x fed; w created outside any guard (it lives on the CPU); y = x * w on
// the device; loss = mean(y); SGD. The placer updates w there and writes it
// back to the CPU, and the next run uploads it again.
void BuildHostParameterUpdatedOnDevice(const Place &device, Workload *w) {
  ProgramBuilder &b = w->builder;
  Var x = b.Data("x", DataType::kFloat32, Shape({4, 3}));
  Var param = b.CreateParameter("w", DataType::kFloat32, Shape({4, 3}),
                                Initializer::Uniform(-1.0, 1.0, /*seed=*/11));
  Var loss;
  {
    auto g = b.device_guard(device.ToString());
    loss = b.Mean(b.ElementwiseMul(x, param));
  }
  SGD sgd(0.1);
  const absl::Status minimized = sgd.Minimize(&b, loss);
  CHECK(minimized.ok()) << minimized;
  CHECK(b.status().ok()) << b.status();
  w->feed_names = {"x"};
  w->fetches = {loss.name};
  w->feeds = [](int step) { return FeedMap{{"x", Floats(Shape({4, 3}), 100 + step)}}; };
}

TEST_P(RunSequences, HostParameterUpdatedOnADeviceRunsInEveryMode) {
  Workload w;
  BuildHostParameterUpdatedOnDevice(GetParam(), &w);
  const Outcome expected = Train(w, CPUPlace(), InOrder(), /*pipelined=*/false, 5);
  ASSERT_EQ(expected.fetched.size(), 5u);
  for (int workers : {1, 2, 4}) {
    for (bool pipelined : {false, true}) {
      SCOPED_TRACE(testing::Message() << workers << " workers, pipelined " << pipelined);
      ExpectSame(expected, Train(w, CPUPlace(), Workers(workers), pipelined, 5));
    }
  }
}

// The first concurrent run used to fail at the write-back (its done event
// was missing) after the update had already changed w.
TEST_P(RunSequences, HostParameterUpdatedOnADeviceChangesOncePerRun) {
  Workload w;
  BuildHostParameterUpdatedOnDevice(GetParam(), &w);
  Executor exe(CPUPlace());
  Scope scope;
  ASSERT_OK(exe.Run(w.builder.startup_program(), &scope).status());
  const std::string before = HostBytes(*scope.Find("w")->data_tensor());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches));
  ASSERT_OK(exe.Run(plan.get(), &scope, w.feeds(0)).status());
  const Tensor *after = scope.Find("w")->data_tensor();
  EXPECT_TRUE(after->place().is_host());  // written back home
  EXPECT_NE(HostBytes(*after), before);
}

void BuildSparseTableOnCpu(int64_t rows, bool shared_ids, Workload *out) {
  Workload &w = *out;
  EmbeddingConfig config;
  config.rows = rows;
  config.dim = 8;
  config.batch = 32;
  config.is_sparse = true;
  config.table_on_cpu = true;
  config.learning_rate = 0.5;
  absl::StatusOr<EmbeddingModel> m = BuildEmbeddingModel(config, &w.builder);
  CHECK(m.ok()) << m.status();
  w.feed_names = {m->ids.name};
  w.fetches = {m->loss.name};
  const std::string ids = m->ids.name;
  w.feeds = [ids, rows, shared_ids](int step) {
    std::mt19937_64 rng(step);
    std::vector<int64_t> v(32);
    for (int64_t &id : v) id = shared_ids ? rng() % 40 : rng() % rows;
    return FeedMap{{ids, Int64s(v)}};
  };
}

// The lookup of step n + 1 overlaps step n's sparse update whichever
// worker runs it: rows the update writes are copied after it.
TEST_P(RunSequences, PipelinedSparseTableOnTheCpuIsExactWithSeveralWorkers) {
  for (bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "batches share rows" : "rows spread");
    Workload w;
    BuildSparseTableOnCpu(512, shared, &w);
    const Outcome expected = Train(w, GetParam(), InOrder(), false, 8);
    for (int workers : {1, 2, 4}) {
      SCOPED_TRACE(testing::Message() << workers << " workers");
      ExpectSame(expected, Train(w, GetParam(), Workers(workers), /*pipelined=*/true, 8));
    }
  }
}

TEST_P(RunSequences, APlanOutlivesItsExecutorAndRunsOnAnother) {
  Workload w;
  BuildSparseTableOnCpu(256, true, &w);
  const Outcome expected = Train(w, GetParam(), InOrder(), false, 6);
  Scope scope;
  std::unique_ptr<Plan> plan;
  Outcome got;
  {
    Executor first(GetParam(), Workers(2));
    ASSERT_OK(first.Run(w.builder.startup_program(), &scope).status());
    ASSERT_OK_AND_ASSIGN(plan,
                         first.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches));
    for (int step = 0; step < 3; ++step) {
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, first.Run(plan.get(), &scope, w.feeds(step)));
      got.fetched.push_back(HostBytes(out[0]));
    }
  }
  Executor second(GetParam(), Workers(4));
  ASSERT_OK_AND_ASSIGN(RunHandle a, second.RunAsync(plan.get(), &scope, w.feeds(3)));
  ASSERT_OK_AND_ASSIGN(RunHandle b, second.RunAsync(plan.get(), &scope, w.feeds(4)));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out_a, a.Wait());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out_b, b.Wait());
  got.fetched.push_back(HostBytes(out_a[0]));
  got.fetched.push_back(HostBytes(out_b[0]));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, second.Run(plan.get(), &scope, w.feeds(5)));
  got.fetched.push_back(HostBytes(out[0]));
  got.scope = ScopeBytes(scope);
  ExpectSame(expected, got);
}

// Handles need their plan only: one waited after its executor is gone.
TEST_P(RunSequences, AHandleIsWaitedAfterItsExecutorIsDestroyed) {
  Workload w;
  BuildSparseTableOnCpu(256, true, &w);
  const Outcome expected = Train(w, GetParam(), InOrder(), false, 3);
  Scope scope;
  std::unique_ptr<Plan> plan;
  std::vector<RunHandle> handles;
  {
    Executor exe(GetParam(), Workers(2));
    ASSERT_OK(exe.Run(w.builder.startup_program(), &scope).status());
    ASSERT_OK_AND_ASSIGN(plan,
                         exe.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches));
    for (int step = 0; step < 3; ++step) {
      ASSERT_OK_AND_ASSIGN(RunHandle h, exe.RunAsync(plan.get(), &scope, w.feeds(step)));
      handles.push_back(std::move(h));
    }
  }
  Outcome got;
  for (RunHandle &h : handles) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, h.Wait());
    got.fetched.push_back(HostBytes(out[0]));
  }
  got.scope = ScopeBytes(scope);
  ExpectSame(expected, got);
}

// RunAsync copies its feeds in: a loop that refills one ids tensor after
// each RunAsync trains as a loop with fresh tensors does.
TEST_P(RunSequences, AFeedTensorRefilledAfterRunAsyncDoesNotChangeTheRun) {
  Workload w;
  BuildSparseTableOnCpu(512, false, &w);
  const Outcome expected = Train(w, GetParam(), InOrder(), false, 6);
  for (int workers : {1, 2}) {
    Executor exe(GetParam(), Workers(workers));
    Scope scope;
    ASSERT_OK(exe.Run(w.builder.startup_program(), &scope).status());
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                         exe.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches));
    Tensor ids = *Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64, Shape({32}));
    const size_t bytes = ids.NumBytes();
    Outcome got;
    std::optional<RunHandle> in_flight;
    for (int step = 0; step < 6; ++step) {
      std::memcpy(ids.raw_data(), w.feeds(step).begin()->second.raw_data(), bytes);
      ASSERT_OK_AND_ASSIGN(RunHandle h, exe.RunAsync(plan.get(), &scope, {{w.feed_names[0], ids}}));
      std::memset(ids.raw_data(), 0xff,
                  bytes);  // ids of -1: the run must not see them
      if (in_flight.has_value()) {
        ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, in_flight->Wait());
        got.fetched.push_back(HostBytes(out[0]));
      }
      in_flight = std::move(h);
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, in_flight->Wait());
    got.fetched.push_back(HostBytes(out[0]));
    got.scope = ScopeBytes(scope);
    ExpectSame(expected, got);
  }
}

TEST_P(RunSequences, BadFeedsOfAPlansFirstRunAsyncAreReportedAtOnce) {
  Workload w;
  BuildSparseTableOnCpu(64, true, &w);
  Executor exe(GetParam());
  Scope scope;
  ASSERT_OK(exe.Run(w.builder.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches));
  const std::string table_before = ScopeBytes(scope).begin()->second;
  const std::string &ids = w.feed_names[0];
  absl::StatusOr<RunHandle> missing = exe.RunAsync(plan.get(), &scope, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("'" + ids + "' was not given"));
  absl::StatusOr<RunHandle> dtype =
      exe.RunAsync(plan.get(), &scope, {{ids, Floats(Shape({32}), 1)}});
  ASSERT_FALSE(dtype.ok());
  EXPECT_THAT(dtype.status().message(), HasSubstr("float32"));
  EXPECT_THAT(dtype.status().message(), HasSubstr("int64"));
  absl::StatusOr<RunHandle> empty = exe.RunAsync(plan.get(), &scope, {{ids, Tensor()}});
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("empty"));
  EXPECT_EQ(ScopeBytes(scope).begin()->second, table_before);  // nothing ran
  // The same after the plan pipelines.
  ASSERT_OK(exe.Run(plan.get(), &scope, w.feeds(0)).status());
  ASSERT_OK_AND_ASSIGN(RunHandle good, exe.RunAsync(plan.get(), &scope, w.feeds(1)));
  absl::StatusOr<RunHandle> bad = exe.RunAsync(plan.get(), &scope, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_OK(good.Wait().status());
}

// Handles dropped without Wait and waits in reverse order: the runs still
// happen in order, exactly.
TEST_P(RunSequences, HandlesWaitedInReverseOrDroppedKeepTheTrajectory) {
  Workload w;
  BuildSparseTableOnCpu(256, true, &w);
  const Outcome expected = Train(w, GetParam(), InOrder(), false, 6);
  for (int workers : {1, 2}) {
    Executor exe(GetParam(), Workers(workers));
    Scope scope;
    ASSERT_OK(exe.Run(w.builder.startup_program(), &scope).status());
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                         exe.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches));
    std::vector<std::string> fetched(6);
    std::vector<RunHandle> handles;
    for (int step = 0; step < 3; ++step) {
      ASSERT_OK_AND_ASSIGN(RunHandle h, exe.RunAsync(plan.get(), &scope, w.feeds(step)));
      handles.push_back(std::move(h));
    }
    for (int step = 2; step >= 0; --step) {
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, handles[step].Wait());
      fetched[step] = HostBytes(out[0]);
    }
    for (int step = 3; step < 5; ++step) {  // dropped at once
      ASSERT_OK(exe.RunAsync(plan.get(), &scope, w.feeds(step)).status());
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> last, exe.Run(plan.get(), &scope, w.feeds(5)));
    EXPECT_EQ(HostBytes(last[0]), expected.fetched[5]);
    for (int step = 0; step < 3; ++step) EXPECT_EQ(fetched[step], expected.fetched[step]);
    const std::map<std::string, std::string> final_scope = ScopeBytes(scope);
    EXPECT_TRUE(final_scope == expected.scope);
  }
}

// One plan alternates two scopes: each scope's trajectory is the one it
// has alone.
TEST_P(RunSequences, OnePlanAlternatingTwoScopesKeepsEachTrajectory) {
  Workload w;
  BuildSparseTableOnCpu(256, true, &w);
  const Outcome expected = Train(w, GetParam(), InOrder(), false, 4);
  Executor exe(GetParam(), Workers(2));
  Scope a, b;
  ASSERT_OK(exe.Run(w.builder.startup_program(), &a).status());
  ASSERT_OK(exe.Run(w.builder.startup_program(), &b).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(w.builder.main_program(), a, w.feed_names, w.fetches));
  std::vector<std::string> got_a, got_b;
  for (int step = 0; step < 4; ++step) {
    ASSERT_OK_AND_ASSIGN(RunHandle ha, exe.RunAsync(plan.get(), &a, w.feeds(step)));
    ASSERT_OK_AND_ASSIGN(RunHandle hb, exe.RunAsync(plan.get(), &b, w.feeds(step)));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out_b, hb.Wait());
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out_a, ha.Wait());
    got_a.push_back(HostBytes(out_a[0]));
    got_b.push_back(HostBytes(out_b[0]));
  }
  EXPECT_EQ(got_a, expected.fetched);
  EXPECT_EQ(got_b, expected.fetched);
  EXPECT_TRUE(ScopeBytes(a) == expected.scope);
  EXPECT_TRUE(ScopeBytes(b) == expected.scope);
}

// A fetched persistable is a value of its own, in every mode: what run n
// returned is run n's table, even once later runs (pipelined: already in
// flight) updated it, and a plan fetching it keeps its runs from
// overlapping instead of returning the next run's value.
TEST_P(RunSequences, AFetchedPersistableIsTheRunsOwnValue) {
  Workload w;
  BuildSparseTableOnCpu(64, true, &w);
  std::string table_name;
  for (const VarDesc &v : w.builder.main_program().block().vars()) {
    if (v.persistable && v.shape.rank() == 2 && v.shape.dim(0) == 64) table_name = v.name;
  }
  ASSERT_FALSE(table_name.empty());
  w.fetches.push_back(table_name);
  const Outcome expected = Train(w, GetParam(), InOrder(), false, 4);
  ASSERT_EQ(expected.fetched.size(), 8u);
  EXPECT_NE(expected.fetched[1], expected.fetched[3]);  // the table changes every step
  for (int workers : {1, 2}) {
    for (bool pipelined : {false, true}) {
      SCOPED_TRACE(testing::Message() << workers << " workers, pipelined " << pipelined);
      ExpectSame(expected, Train(w, GetParam(), Workers(workers), pipelined, 4));
    }
  }
  // Kept past later runs: the first fetch is still the first run's table.
  Executor exe(GetParam());
  Scope scope;
  ASSERT_OK(exe.Run(w.builder.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> first, exe.Run(plan.get(), &scope, w.feeds(0)));
  for (int step = 1; step < 3; ++step) {
    ASSERT_OK(exe.Run(plan.get(), &scope, w.feeds(step)).status());
  }
  EXPECT_EQ(HostBytes(first[1]), expected.fetched[1]);
}

// Calls Executor::Cancel when the `at`-th op (or copy) of any run begins,
// from the thread that runs it, as a signal handler could.
class CancelAtOp : public ExecutionObserver {
 public:
  CancelAtOp(Executor *exe, int at) : exe_(exe), at_(at) { SetExecutionObserver(this); }
  ~CancelAtOp() override { SetExecutionObserver(nullptr); }
  void OnOpBegin(const OpEvent &) override {
    if (++begun_ == at_) exe_->Cancel();
  }
  int begun() const { return begun_.load(); }

 private:
  Executor *const exe_;
  const int at_;
  std::atomic<int> begun_{0};
};

// Two runs in flight and Cancel() at every op of either, with one and two
// host workers: each run completes or is Cancelled (a cancelled run cancels
// the one after it), the scope holds exactly the completed steps, and the
// next run is an ordinary one.
TEST_P(RunSequences, CancelAtEveryOpOfTwoRunsInFlightKeepsTheScopeExact) {
  Workload w;
  BuildSparseTableOnCpu(128, true, &w);
  std::vector<std::map<std::string, std::string>> after;  // after k steps, in order
  {
    Executor exe(GetParam(), InOrder());
    Scope scope;
    ASSERT_OK(exe.Run(w.builder.startup_program(), &scope).status());
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                         exe.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches));
    after.push_back(ScopeBytes(scope));
    for (int step = 0; step < 4; ++step) {
      ASSERT_OK(exe.Run(plan.get(), &scope, w.feeds(step)).status());
      after.push_back(ScopeBytes(scope));
    }
  }
  for (int workers : {1, 2}) {
    int ops = 0;
    std::vector<int> completed_counts(4, 0);
    for (int at = 0; at == 0 || at <= ops; ++at) {  // at 0: counts the ops of two runs
      SCOPED_TRACE(testing::Message() << workers << " workers, cancelled at op " << at);
      Executor exe(GetParam(), Workers(workers));
      Scope scope;
      ASSERT_OK(exe.Run(w.builder.startup_program(), &scope).status());
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                           exe.Prepare(w.builder.main_program(), scope, w.feed_names, w.fetches));
      ASSERT_OK(exe.Run(plan.get(), &scope, w.feeds(0)).status());  // later runs pipeline
      absl::Status first_status, second_status;
      {
        CancelAtOp cancel(&exe, at == 0 ? -1 : at);
        ASSERT_OK_AND_ASSIGN(RunHandle first, exe.RunAsync(plan.get(), &scope, w.feeds(1)));
        ASSERT_OK_AND_ASSIGN(RunHandle second, exe.RunAsync(plan.get(), &scope, w.feeds(2)));
        first_status = first.Wait().status();
        second_status = second.Wait().status();
        if (at == 0) ops = cancel.begun();
      }
      for (const absl::Status &s : {first_status, second_status}) {
        if (!s.ok()) EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
      }
      if (!first_status.ok()) EXPECT_FALSE(second_status.ok()) << "a run after a cancelled one ran";
      const int completed = 1 + first_status.ok() + second_status.ok();
      completed_counts[completed]++;
      EXPECT_TRUE(ScopeBytes(scope) == after[completed])
          << completed << " steps completed; " << first_status << "; " << second_status;
      ASSERT_OK(exe.Run(plan.get(), &scope, w.feeds(completed)).status());
      EXPECT_TRUE(ScopeBytes(scope) == after[completed + 1]) << "the run after the cancelled ones";
    }
    EXPECT_GT(ops, 10);
    // Cancels landed in the first run and in the second (a cancel after a
    // run's commit began, or at its last ops, lets it complete).
    EXPECT_GT(completed_counts[1], 0);
    EXPECT_GT(completed_counts[2], 0);
    std::cout << GetParam().ToString() << ", " << workers << " workers: " << ops
              << " ops in two runs; both cancelled " << completed_counts[1] << ", the second only "
              << completed_counts[2] << ", neither " << completed_counts[3] << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, RunSequences, ::testing::ValuesIn(DevicePlaces()),
                         [](const ::testing::TestParamInfo<Place> &info) {
                           std::string name = info.param.ToString();  // "sim:0" -> "sim0"
                           name.erase(std::remove(name.begin(), name.end(), ':'), name.end());
                           return name;
                         });

}  // namespace
}  // namespace tandem
