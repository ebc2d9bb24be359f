// DataParallel on 2 and 4 sim replicas against the one-device run on sim:0
// with the same global batches: the Fashion-MNIST MLP and CNN (SGD) and the
// CTR model with its tables shared on the host (Adam, sparse updates).
// Losses of 20 steps and every parameter and optimizer state after them
// match within float32 reassociation (the gradients of a batch's halves are
// summed in another order than the whole batch's); the replicas' parameters
// are bitwise identical to each other (the all-reduce sums in rank order
// into one result). Also: a bad input on one rank fails every rank, naming
// the rank and the op, well within the deadline, and the next step works;
// a checkpoint of 2 replicas resumes on 4 and on one device; collectives
// are profiled with bytes and bandwidths.
#include "framework/parallel/data_parallel.h"

#include <gflags/gflags.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backends/sim/sim_device.h"
#include "framework/backward/optimizer.h"
#include "framework/device/device_registry.h"
#include "framework/persistence/checkpoint.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "models/ctr/ctr_model.h"
#include "models/fashion_mnist/fashion_mnist_model.h"
#include "profiler/profiler.h"
#include "profiler/report.h"
#include "tests/parallel/data_parallel_testutil.h"

DECLARE_int32(sim_devices);

namespace tandem {
namespace {

using ::testing::HasSubstr;

constexpr int kSteps = 20;

// Four sim devices, set before any is made (the count is read once).
class FourSimDevices : public ::testing::Environment {
 public:
  void SetUp() override { FLAGS_sim_devices = 4; }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new FourSimDevices);

std::vector<Place> SimPlaces(int n) {
  std::vector<Place> places;
  for (int i = 0; i < n; ++i) places.push_back(SimPlace(i));
  return places;
}

std::unique_ptr<DataParallel> MakeDataParallelOn(Kind kind, std::vector<Place> places, Model* m,
                                                 absl::Duration deadline = absl::Seconds(60)) {
  DataParallelOptions o;
  o.places = std::move(places);
  o.deadline = deadline;
  return tandem::MakeDataParallel(kind, o, m);
}

std::unique_ptr<DataParallel> MakeDataParallel(Kind kind, int n, Model* m,
                                               absl::Duration deadline = absl::Seconds(60)) {
  return MakeDataParallelOn(kind, SimPlaces(n), m, deadline);
}

// Steps [first, last) of `dp`, appending the mean of the ranks' losses.
void Train(Kind kind, DataParallel* dp, int first, int last, Trajectory* t) {
  for (int s = first; s < last; ++s) {
    absl::StatusOr<std::vector<std::vector<Tensor>>> out = dp->Step(Feeds(kind, s, BatchOf(kind)));
    ASSERT_OK(out.status());
    double sum = 0;
    for (const std::vector<Tensor>& rank : *out) sum += ToDoubles(rank[0])[0];
    t->losses.push_back(sum / dp->size());
  }
}

// The replicas match the one-device run, and each other bit for bit.
void ExpectMatches(const Trajectory& one, const Trajectory& dp_losses, DataParallel* dp) {
  ExpectClose(one.losses, dp_losses.losses, "loss per step");
  const auto rank0 = Snapshot(dp->programs().main[0], *dp->scope(0));
  for (const auto& [name, values] : one.state) {
    ASSERT_TRUE(rank0.count(name)) << name;
    ExpectClose(values, rank0.at(name), name);
  }
  for (int r = 1; r < dp->size(); ++r) {
    for (const auto& [name, values] : Snapshot(dp->programs().main[r], *dp->scope(r))) {
      EXPECT_EQ(values, rank0.at(name)) << name << " on rank " << r;
    }
  }
}

class DataParallelModels : public ::testing::TestWithParam<std::tuple<Kind, int>> {};

TEST_P(DataParallelModels, MatchesOneDeviceForTwentySteps) {
  const auto [kind, n] = GetParam();
  const Trajectory one = OneDevice(kind, kSteps);
  ASSERT_EQ(one.losses.size(), kSteps);
  Model m;
  std::unique_ptr<DataParallel> dp = MakeDataParallel(kind, n, &m);
  ASSERT_NE(dp, nullptr);
  if (kind != Kind::kCtr) {
    EXPECT_GT(dp->programs().buckets.size(), 1u);
    EXPECT_TRUE(dp->programs().shared.empty());
  } else {
    // The tables and their Adam state exist once; the dense layers per rank.
    EXPECT_EQ(dp->programs().shared.size(), 3u * 5u);
    const Tensor& t0 = dp->scope(0)->Find("table_0")->tensor();
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(dp->scope(r)->Find("table_0")->tensor().buffer(), t0.buffer());
    }
  }
  Trajectory t;
  Train(kind, dp.get(), 0, kSteps, &t);
  ExpectMatches(one, t, dp.get());
  EXPECT_LT(t.losses.back(), t.losses.front());  // it trains
}

std::string Name(const ::testing::TestParamInfo<std::tuple<Kind, int>>& info) {
  const char* kinds[] = {"Mlp", "Cnn", "Ctr"};
  return std::string(kinds[static_cast<int>(std::get<0>(info.param))]) + "On" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(SimReplicas, DataParallelModels,
                         ::testing::Combine(::testing::Values(Kind::kMlp, Kind::kCnn, Kind::kCtr),
                                            ::testing::Values(2, 4)),
                         Name);

// NCCL through the executor: 1 replica on gpu:0 (single-rank communicator,
// the collective stream), 2 on gpu:0 and gpu:1; skipped without the GPUs.
TEST(DataParallel, OnGpusMatchesOneGpu) {
  const int gpus = DeviceRegistry::Global().DeviceCount(DeviceType::GPU());
  if (gpus == 0) GTEST_SKIP() << "no GPU";
  for (int n : {1, 2}) {
    if (n > gpus) continue;
    SCOPED_TRACE(n);
    for (Kind kind : {Kind::kMlp, Kind::kCtr}) {
      const Trajectory one = OneDevice(kind, kSteps, GPUPlace(0));
      std::vector<Place> places;
      for (int i = 0; i < n; ++i) places.push_back(GPUPlace(i));
      Model m;
      std::unique_ptr<DataParallel> dp = MakeDataParallelOn(kind, places, &m);
      ASSERT_NE(dp, nullptr);
      Trajectory t;
      Train(kind, dp.get(), 0, kSteps, &t);
      ExpectMatches(one, t, dp.get());
    }
  }
}

TEST(DataParallel, BadInputOnOneRankFailsEveryRankNamingIt) {
  Model m;
  std::unique_ptr<DataParallel> dp = MakeDataParallel(Kind::kCtr, 4, &m, absl::Seconds(20));
  ASSERT_NE(dp, nullptr);
  Trajectory t;
  Train(Kind::kCtr, dp.get(), 0, 2, &t);
  const auto before = Snapshot(dp->programs().main[0], *dp->scope(0));
  const auto start = std::chrono::steady_clock::now();
  // Row 9 of 16 is rank 2's (rows 8..11).
  absl::StatusOr<std::vector<std::vector<Tensor>>> out = dp->Step(Feeds(Kind::kCtr, 2, 16, 9));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_THAT(out.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("data parallel step 2: rank 2 (sim:2) failed")));
  EXPECT_THAT(out.status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("op 'lookup_table'")));
  for (int r = 0; r < 4; ++r) {
    const absl::Status& s = dp->step_statuses()[r];
    EXPECT_FALSE(s.ok()) << "rank " << r;
    EXPECT_THAT(s.message(), HasSubstr("lookup_table")) << "rank " << r;
    if (r != 2) {
      EXPECT_THAT(s.message(), HasSubstr("rank 2")) << "rank " << r;
    }
  }
  // Every rank stopped before its updates; the next step runs.
  EXPECT_EQ(Snapshot(dp->programs().main[0], *dp->scope(0)), before);
  Train(Kind::kCtr, dp.get(), 2, 3, &t);
  EXPECT_EQ(t.losses.size(), 3u);
}

TEST(DataParallel, UnevenBatchIsRefusedNamingTheFeed) {
  Model m;
  std::unique_ptr<DataParallel> dp = MakeDataParallel(Kind::kMlp, 4, &m);
  ASSERT_NE(dp, nullptr);
  EXPECT_THAT(dp->Step(Feeds(Kind::kMlp, 0, 6)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("feed 'image' float32[6, 28, 28] on cpu does not split into 4")));
}

TEST(DataParallel, CheckpointOfTwoReplicasResumesOnFourAndOnOneDevice) {
  const Trajectory one = OneDevice(Kind::kCtr, kSteps);
  const std::string path = ::testing::TempDir() + "/dp.ckpt";
  Trajectory t;
  {
    Model m;
    std::unique_ptr<DataParallel> two = MakeDataParallel(Kind::kCtr, 2, &m);
    ASSERT_NE(two, nullptr);
    Train(Kind::kCtr, two.get(), 0, kSteps / 2, &t);
    ASSERT_OK(two->Save(path));
  }
  Model m4;
  std::unique_ptr<DataParallel> four = MakeDataParallel(Kind::kCtr, 4, &m4);
  ASSERT_NE(four, nullptr);
  ASSERT_OK(four->Load(path));
  Train(Kind::kCtr, four.get(), kSteps / 2, kSteps, &t);
  ExpectMatches(one, t, four.get());

  // The same file is a one-device checkpoint.
  Model m1;
  Build(Kind::kCtr, &m1);
  Executor exe(SimPlace(1));
  Scope scope;
  ASSERT_OK(exe.Run(m1.b.startup_program(), &scope).status());
  std::map<std::string, Place> places;
  for (const std::string& name : PersistableVars(m1.b.main_program())) {
    places[name] = scope.Find(name)->tensor().place();
  }
  ASSERT_OK(LoadCheckpoint(path, &scope, places));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(m1.b.main_program(), scope, m1.feeds, {m1.loss}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> loss,
                       exe.Run(plan.get(), &scope, Feeds(Kind::kCtr, kSteps / 2, 16)));
  ExpectClose({one.losses[kSteps / 2]}, ToDoubles(loss[0]), "resumed one-device loss");
}

TEST(DataParallel, CollectivesAreProfiledWithBytesAndBandwidth) {
  Model m;
  std::unique_ptr<DataParallel> dp = MakeDataParallel(Kind::kMlp, 2, &m);
  ASSERT_NE(dp, nullptr);
  ASSERT_OK(profiler::StartProfiler("All", /*warmup_runs=*/0));
  Trajectory t;
  Train(Kind::kMlp, dp.get(), 0, 3, &t);
  ASSERT_OK_AND_ASSIGN(profiler::Profile p, profiler::CollectProfile());
  // The bytes of the first bucket's gradients (those of their parameters).
  int64_t bucket0 = 0;
  for (const std::string& g : dp->programs().buckets[0]) {
    const std::string param = g.substr(0, g.size() - std::string(kGradSuffix).size());
    bucket0 += static_cast<int64_t>(dp->scope(0)->Find(param)->tensor().NumBytes());
  }
  int allreduces = 0;
  for (const profiler::ProfileEvent& e : p.events) {
    if (e.collective != CollectiveKind::kAllReduce) continue;
    ++allreduces;
    EXPECT_EQ(e.name, "c_allreduce_sum");
    EXPECT_EQ(e.ranks, 2);
    EXPECT_GT(e.bytes, 0);
    EXPECT_DOUBLE_EQ(e.BusGBps(), e.AlgorithmGBps());  // 2 (n - 1) / n = 1 for 2 ranks
    EXPECT_EQ(p.streams[e.stream].name, "collective");
  }
  // Every bucket, on both ranks, in every step.
  EXPECT_EQ(allreduces, static_cast<int>(dp->programs().buckets.size()) * 2 * 3);
  int64_t first_bytes = -1;
  for (const profiler::ProfileEvent& e : p.events) {
    if (e.collective == CollectiveKind::kAllReduce && first_bytes < 0) first_bytes = e.bytes;
  }
  EXPECT_EQ(first_bytes, bucket0);
  EXPECT_THAT(profiler::FormatReport(p, profiler::SortKey::kDefault),
              HasSubstr("c_allreduce_sum          Place: sim:0"));
}

}  // namespace
}  // namespace tandem
