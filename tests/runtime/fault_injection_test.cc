// Allocation failures during a training step: for every N, the N-th
// allocation of one step of a small CTR model (embedding tables and their
// sparse Adam updates on the CPU, the MLP on the executor's place) fails.
// The run must return ResourceExhausted naming the op, leave every
// persistable variable bit for bit as it was before the step, and the same
// step run again without injection must give exactly what an uninjected run
// gives. On cpu and on sim:0. And a checkpoint save that runs out of disk
// space midway leaves the previous checkpoint in place and loadable. And
// Executor::Cancel at every op of a step, and with two pipelined runs in
// flight, leaves the scope as it was or completes the step.
#include "framework/testing/fault_injection.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/backward/optimizer.h"
#include "framework/persistence/atomic_file.h"
#include "framework/persistence/checkpoint.h"
#include "framework/runtime/execution_observer.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/ctr/ctr_model.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kBatch = 6;

// A fresh model, scope (after the startup program) and plan.
struct Trainer {
  ProgramBuilder builder;
  CtrModel model;
  std::unique_ptr<Executor> exe;
  Scope scope;
  std::unique_ptr<Plan> plan;
};

std::unique_ptr<Trainer> MakeTrainer(const Place& place, ExecutorOptions options = {}) {
  auto t = std::make_unique<Trainer>();
  CtrModelConfig config;
  config.vocab_sizes = {13, 29};
  config.embedding_dim = 4;
  config.hidden = {8};
  Adam adam(0.05);
  t->model = BuildCtrModel(config, &adam, &t->builder).value();
  t->exe = std::make_unique<Executor>(place, options);
  const absl::Status started = t->exe->Run(t->builder.startup_program(), &t->scope).status();
  CHECK(started.ok()) << started;
  std::vector<std::string> feeds;
  for (const Var& ids : t->model.ids) feeds.push_back(ids.name);
  feeds.push_back(t->model.label.name);
  t->plan =
      t->exe->Prepare(t->builder.main_program(), t->scope, feeds, {t->model.loss.name}).value();
  return t;
}

FeedMap Feeds(const Trainer& t) {
  FeedMap feeds;
  const std::vector<int64_t> vocab = {13, 29};
  for (size_t f = 0; f < t.model.ids.size(); ++f) {
    std::vector<double> ids(kBatch);
    for (int64_t i = 0; i < kBatch; ++i) ids[i] = static_cast<double>((i * 7 + f * 3) % vocab[f]);
    feeds[t.model.ids[f].name] = MakeTensor(DataType::kInt64, Shape({kBatch}), ids);
  }
  std::vector<double> labels(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) labels[i] = i % 2;
  feeds[t.model.label.name] = MakeTensor(DataType::kInt64, Shape({kBatch}), labels);
  return feeds;
}

// Host copies of every persistable variable, by name.
std::map<std::string, Tensor> Snapshot(Trainer& t) {
  std::map<std::string, Tensor> out;
  for (const std::string& name : PersistableVars(t.builder.main_program())) {
    out[name] = CopyTensorTo(t.scope.Find(name)->tensor(), CPUPlace()).value();
  }
  return out;
}

// The names of the persistables whose bytes differ.
std::vector<std::string> Differences(const std::map<std::string, Tensor>& a,
                                     const std::map<std::string, Tensor>& b) {
  std::vector<std::string> out;
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.NumBytes() != t.NumBytes() ||
        std::memcmp(it->second.raw_data(), t.raw_data(), t.NumBytes()) != 0) {
      out.push_back(name);
    }
  }
  return out;
}

class FaultInjectionTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FaultInjectionTest, EveryFailedAllocationOfAStepLeavesTheScopeAsItWas) {
  const Place place = *ParsePlace(GetParam());
  // The uninjected step: how many allocations it makes and what it gives.
  std::unique_ptr<Trainer> ref = MakeTrainer(place);
  const FeedMap feeds = Feeds(*ref);
  const std::map<std::string, Tensor> before = Snapshot(*ref);
  int64_t allocations;
  std::vector<Tensor> ref_loss;
  {
    AllocationFaultInjector count;
    ASSERT_OK_AND_ASSIGN(ref_loss, ref->exe->Run(ref->plan.get(), &ref->scope, feeds));
    allocations = count.allocations();
    EXPECT_FALSE(count.fired());
  }
  const std::map<std::string, Tensor> after = Snapshot(*ref);
  ASSERT_GT(allocations, 10);
  ASSERT_GE(before.size(),
            3u * 4u);  // tables and fc weights, with two Adam moments each
  EXPECT_FALSE(Differences(before, after).empty()) << "the step changed no parameter";

  std::set<std::string> op_types;
  for (const OpDesc& op : ref->builder.main_program().block().ops()) op_types.insert(op.type);
  for (int64_t n = 1; n <= allocations; ++n) {
    SCOPED_TRACE(absl::StrCat(place.ToString(), ": allocation #", n, " of ", allocations));
    std::unique_ptr<Trainer> t = MakeTrainer(place);
    ASSERT_TRUE(Differences(before, Snapshot(*t)).empty());  // the startup is deterministic
    absl::Status status;
    {
      AllocationFaultInjector inject(n);
      status = t->exe->Run(t->plan.get(), &t->scope, feeds).status();
      ASSERT_TRUE(inject.fired());
      EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
      EXPECT_THAT(status.message(), HasSubstr(inject.failure()));
    }
    // Names the op that failed, "op 'TYPE' (#I) on PLACE", or the fetch
    // whose host buffer could not be allocated.
    const std::string message(status.message());
    const size_t at = message.find("op '");
    if (at == std::string::npos) {
      EXPECT_THAT(message, HasSubstr(absl::StrCat("fetching '", t->model.loss.name, "' from ",
                                                  place.ToString())));
    } else {
      const std::string type = message.substr(at + 4, message.find('\'', at + 4) - at - 4);
      EXPECT_TRUE(op_types.count(type) || type == "memcpy_h2d" || type == "memcpy_d2h") << status;
    }
    // Updates wait for every other step and for the fetches' host buffers
    // (Step::held_for_commit), so nothing was updated.
    EXPECT_THAT(Differences(before, Snapshot(*t)), ::testing::IsEmpty())
        << "persistables changed by the failed step: " << status;
    // The step again, without injection: exactly the uninjected result.
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> loss, t->exe->Run(t->plan.get(), &t->scope, feeds));
    EXPECT_EQ(loss[0].ToVector<float>(), ref_loss[0].ToVector<float>());
    EXPECT_THAT(Differences(after, Snapshot(*t)), ::testing::IsEmpty());
  }
}

TEST_P(FaultInjectionTest, ASaveThatRunsOutOfSpaceMidwayKeepsThePreviousCheckpoint) {
  const Place place = *ParsePlace(GetParam());
  std::unique_ptr<Trainer> t = MakeTrainer(place);
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/enospc_", place.ToString(), ".ckpt");
  ASSERT_OK(SaveCheckpoint(t->builder.main_program(), t->scope, path));
  const std::map<std::string, Tensor> saved = Snapshot(*t);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  const int64_t size = st.st_size;
  ASSERT_OK(t->exe->Run(t->plan.get(), &t->scope, Feeds(*t)).status());
  ASSERT_FALSE(Differences(saved, Snapshot(*t)).empty());

  // The disk fills up at several points of the new file: the first byte,
  // inside the header, halfway, one byte short of the end.
  for (const int64_t full_at : {int64_t{0}, int64_t{10}, size / 2, size - 1}) {
    SCOPED_TRACE(absl::StrCat("disk full after ", full_at, " of ", size, " bytes"));
    int64_t writes = 0;
    const AtomicFileWriteHook hook = [&](const std::string& tmp, int64_t offset, size_t* n) {
      ++writes;
      if (offset + static_cast<int64_t>(*n) <= full_at) return 0;
      *n = static_cast<size_t>(std::max<int64_t>(full_at - offset, 0));
      return ENOSPC;
    };
    SetAtomicFileWriteHookForTesting(&hook);
    const absl::Status s = SaveCheckpoint(t->builder.main_program(), t->scope, path);
    SetAtomicFileWriteHookForTesting(nullptr);
    EXPECT_GT(writes, 0);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_THAT(s.message(), HasSubstr(path + ".tmp")) << s;
    EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << "the temporary file survived";
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, size);

    Trainer loaded;
    ASSERT_OK(LoadCheckpoint(path, &loaded.scope));
    std::map<std::string, Tensor> got;
    for (const auto& [name, tensor] : saved) {
      ASSERT_NE(loaded.scope.Find(name), nullptr) << name;
      got[name] = CopyTensorTo(loaded.scope.Find(name)->tensor(), CPUPlace()).value();
    }
    EXPECT_THAT(Differences(saved, got), ::testing::IsEmpty());
  }
}

// Calls Executor::Cancel when the `at`-th op of a run begins (from the
// thread that runs it, as a signal handler would from anywhere).
class CancelAtOp : public ExecutionObserver {
 public:
  CancelAtOp(Executor* exe, int at) : exe_(exe), at_(at) { SetExecutionObserver(this); }
  ~CancelAtOp() override { SetExecutionObserver(nullptr); }
  void OnOpBegin(const OpEvent&) override {
    if (++begun_ == at_) exe_->Cancel();
  }
  int begun() const { return begun_.load(); }

 private:
  Executor* exe_;
  const int at_;
  std::atomic<int> begun_{0};
};

// Cancel at every op of a step, in order and concurrently: the run is
// Cancelled naming an op with the scope untouched (or, once its commit
// began, completes with exactly the uninjected update), and the next run
// is an ordinary one.
TEST_P(FaultInjectionTest, CancelAtEveryOpOfAStepLeavesTheScopeAsItWasOrCompletes) {
  const Place place = *ParsePlace(GetParam());
  std::unique_ptr<Trainer> ref = MakeTrainer(place);
  const FeedMap feeds = Feeds(*ref);
  const std::map<std::string, Tensor> before = Snapshot(*ref);
  int ops;
  std::vector<Tensor> ref_loss;
  {
    CancelAtOp count(ref->exe.get(), /*at=*/-1);
    ASSERT_OK_AND_ASSIGN(ref_loss, ref->exe->Run(ref->plan.get(), &ref->scope, feeds));
    ops = count.begun();
  }
  const std::map<std::string, Tensor> after = Snapshot(*ref);
  ASSERT_GT(ops, 10);
  for (const bool in_order : {true, false}) {
    ExecutorOptions options;
    options.in_order = in_order;
    int cancelled = 0;
    for (int at = 1; at <= ops; ++at) {
      SCOPED_TRACE(absl::StrCat(place.ToString(), in_order ? " in order" : " concurrent",
                                ": cancelled at op ", at, " of ", ops));
      std::unique_ptr<Trainer> t = MakeTrainer(place, options);
      absl::Status status;
      {
        CancelAtOp cancel(t->exe.get(), at);
        status = t->exe->Run(t->plan.get(), &t->scope, feeds).status();
      }
      if (status.ok()) {
        EXPECT_THAT(Differences(after, Snapshot(*t)), ::testing::IsEmpty());
        continue;
      }
      ++cancelled;
      EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
      EXPECT_THAT(status.message(), HasSubstr("run cancelled (Executor::Cancel) before op '"));
      EXPECT_THAT(Differences(before, Snapshot(*t)), ::testing::IsEmpty()) << status;
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> loss, t->exe->Run(t->plan.get(), &t->scope, feeds));
      EXPECT_EQ(loss[0].ToVector<float>(), ref_loss[0].ToVector<float>());
      EXPECT_THAT(Differences(after, Snapshot(*t)), ::testing::IsEmpty());
    }
    // Cancel lands before the next op: at least every op before the
    // updates (the forward and backward) can be cancelled.
    EXPECT_GE(cancelled, ops / 2);
  }
}

// Two pipelined runs in flight and Cancel(): each is complete or Cancelled
// (a cancelled run cancels the one after it), the scope holds exactly the
// completed steps, and a run started after Cancel() is not affected.
TEST_P(FaultInjectionTest, CancelWithTwoPipelinedRunsInFlight) {
  const Place place = *ParsePlace(GetParam());
  std::unique_ptr<Trainer> ref = MakeTrainer(place);
  const FeedMap feeds = Feeds(*ref);
  std::vector<std::map<std::string, Tensor>> after_steps = {Snapshot(*ref)};
  for (int step = 0; step < 4; ++step) {
    ASSERT_OK(ref->exe->Run(ref->plan.get(), &ref->scope, feeds).status());
    after_steps.push_back(Snapshot(*ref));
  }
  std::unique_ptr<Trainer> t = MakeTrainer(place);
  ASSERT_OK(t->exe->Run(t->plan.get(), &t->scope, feeds).status());  // runs after it pipeline
  ASSERT_OK_AND_ASSIGN(RunHandle first, t->exe->RunAsync(t->plan.get(), &t->scope, feeds));
  ASSERT_OK_AND_ASSIGN(RunHandle second, t->exe->RunAsync(t->plan.get(), &t->scope, feeds));
  t->exe->Cancel();
  const absl::Status first_status = first.Wait().status();
  const absl::Status second_status = second.Wait().status();
  int completed = 1;
  for (const absl::Status& s : {first_status, second_status}) {
    if (s.ok()) {
      ++completed;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
    }
  }
  if (!first_status.ok()) {
    EXPECT_FALSE(second_status.ok()) << "a run after a cancelled one ran";
  }
  EXPECT_THAT(Differences(after_steps[completed], Snapshot(*t)), ::testing::IsEmpty())
      << completed << " steps completed; " << first_status << "; " << second_status;
  ASSERT_OK(t->exe->Run(t->plan.get(), &t->scope, feeds).status());
  EXPECT_THAT(Differences(after_steps[completed + 1], Snapshot(*t)), ::testing::IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Places, FaultInjectionTest, ::testing::Values("cpu", "sim:0"),
                         [](const auto& info) {
                           return std::string(info.param[0] == 'c' ? "cpu" : "sim0");
                         });

}  // namespace
}  // namespace tandem
