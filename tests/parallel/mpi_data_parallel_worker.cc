// The rank of one process in an mpirun job (mpi_data_parallel_test.sh
// starts two): DataParallel across processes (an MpiProcessGroup) against
// the one-device run that each process also makes, for the Fashion-MNIST
// MLP and CNN and the CTR model, whose host tables every process keeps and
// updates identically. Also: a checkpoint the job saves once resumes on one
// device; a bad input on one rank and a killed rank make the others fail
// naming it, well within the deadline. Each test after a failure case
// would find the group failed, so the script runs those alone.
//
//   mpirun -np 2 mpi_data_parallel_worker --place=sim --gtest_filter='*Matches*'
#include <gflags/gflags.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "distributed/mpi/mpi_process_group.h"
#include "framework/parallel/data_parallel.h"
#include "framework/persistence/checkpoint.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "tests/parallel/data_parallel_testutil.h"

DEFINE_string(place, "cpu", "the place type of every rank: cpu or sim");
DEFINE_string(checkpoint_dir, "", "a directory every rank can read (the checkpoint test)");

namespace tandem {
namespace {

using ::testing::HasSubstr;

constexpr int kSteps = 20;

std::shared_ptr<MpiProcessGroup>& Mpi() {
  static auto* mpi = new std::shared_ptr<MpiProcessGroup>();
  return *mpi;
}

Place RankPlace() { return FLAGS_place == "sim" ? SimPlace(0) : CPUPlace(); }

std::unique_ptr<DataParallel> AcrossProcesses(Kind kind, Model* m, absl::Duration deadline) {
  DataParallelOptions o;
  o.places = {RankPlace()};
  o.processes = Mpi();
  o.deadline = deadline;
  return tandem::MakeDataParallel(kind, o, m);
}

// The mean of the ranks' values (each process's own value, exchanged).
double MeanOverRanks(double mine) {
  std::vector<double> all(Mpi()->size());
  EXPECT_OK(Mpi()->AllGather(&mine, sizeof mine, all.data(), absl::Seconds(30), "losses"));
  double sum = 0;
  for (double v : all) sum += v;
  return sum / all.size();
}

void Train(Kind kind, DataParallel* dp, int first, int last, Trajectory* t) {
  for (int s = first; s < last; ++s) {
    absl::StatusOr<std::vector<std::vector<Tensor>>> out = dp->Step(Feeds(kind, s, BatchOf(kind)));
    ASSERT_OK(out.status());
    ASSERT_EQ(out->size(), 1u);
    t->losses.push_back(MeanOverRanks(ToDoubles((*out)[0][0])[0]));
  }
}

// FNV-1a of every value of a snapshot: equal on every rank iff bitwise equal.
uint64_t Fingerprint(const std::map<std::string, std::vector<double>>& state) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& [name, values] : state) {
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    for (double v : values) {
      unsigned char bytes[sizeof v];
      std::memcpy(bytes, &v, sizeof v);
      for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ull;
    }
  }
  return h;
}

void ExpectSameOnEveryRank(const std::map<std::string, std::vector<double>>& state) {
  const uint64_t mine = Fingerprint(state);
  std::vector<uint64_t> all(Mpi()->size());
  ASSERT_OK(Mpi()->AllGather(&mine, sizeof mine, all.data(), absl::Seconds(30), "fingerprints"));
  for (int r = 0; r < Mpi()->size(); ++r) EXPECT_EQ(all[r], all[0]) << "rank " << r;
}

class MpiDataParallel : public ::testing::TestWithParam<Kind> {};

TEST_P(MpiDataParallel, MatchesOneDeviceForTwentySteps) {
  const Kind kind = GetParam();
  const Trajectory one = OneDevice(kind, kSteps, RankPlace());
  Model m;
  std::unique_ptr<DataParallel> dp = AcrossProcesses(kind, &m, absl::Seconds(60));
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->size(), Mpi()->size());
  EXPECT_EQ(dp->first_rank(), Mpi()->rank());
  EXPECT_TRUE(dp->programs().shared.empty());  // host tables are per process
  Trajectory t;
  Train(kind, dp.get(), 0, kSteps, &t);
  ExpectClose(one.losses, t.losses, "loss per step");
  const auto mine = Snapshot(dp->programs().main[dp->first_rank()], *dp->scope(0));
  for (const auto& [name, values] : one.state) {
    ASSERT_TRUE(mine.count(name)) << name;
    ExpectClose(values, mine.at(name), name);
  }
  ExpectSameOnEveryRank(mine);
  EXPECT_LT(t.losses.back(), t.losses.front());  // it trains
}

std::string KindName(const ::testing::TestParamInfo<Kind>& info) {
  switch (info.param) {
    case Kind::kMlp:
      return "Mlp";
    case Kind::kCnn:
      return "Cnn";
    case Kind::kCtr:
      return "Ctr";
  }
  return "Unknown";
}

INSTANTIATE_TEST_SUITE_P(Models, MpiDataParallel,
                         ::testing::Values(Kind::kMlp, Kind::kCnn, Kind::kCtr), KindName);

TEST(MpiDataParallelCheckpoint, SavedOnceResumesOnOneDevice) {
  ASSERT_FALSE(FLAGS_checkpoint_dir.empty()) << "--checkpoint_dir";
  const std::string path = FLAGS_checkpoint_dir + "/mpi.ckpt";
  const Trajectory one = OneDevice(Kind::kCtr, kSteps, RankPlace());
  Trajectory t;
  {
    Model m;
    std::unique_ptr<DataParallel> dp = AcrossProcesses(Kind::kCtr, &m, absl::Seconds(60));
    ASSERT_NE(dp, nullptr);
    Train(Kind::kCtr, dp.get(), 0, kSteps / 2, &t);
    ASSERT_OK(dp->Save(path));  // rank 0 writes; every rank returns once it has
  }
  // Every process resumes the file on one device.
  Model m;
  Build(Kind::kCtr, &m);
  Executor exe(RankPlace());
  Scope scope;
  ASSERT_OK(exe.Run(m.b.startup_program(), &scope).status());
  ASSERT_OK(LoadCheckpoint(path, &scope));
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(m.b.main_program(), scope, m.feeds, {m.loss});
  ASSERT_OK(plan.status());
  for (int s = kSteps / 2; s < kSteps; ++s) {
    absl::StatusOr<std::vector<Tensor>> out =
        exe.Run(plan->get(), &scope, Feeds(Kind::kCtr, s, BatchOf(Kind::kCtr)));
    ASSERT_OK(out.status());
    t.losses.push_back(ToDoubles((*out)[0])[0]);
  }
  ExpectClose(one.losses, t.losses, "loss per step");
}

// Run alone: it leaves the group failed.
TEST(MpiDataParallelFailure, BadInputOnOneRankFailsEveryRankNamingIt) {
  Model m;
  std::unique_ptr<DataParallel> dp = AcrossProcesses(Kind::kCtr, &m, absl::Seconds(20));
  ASSERT_NE(dp, nullptr);
  Trajectory t;
  Train(Kind::kCtr, dp.get(), 0, 2, &t);
  const auto start = std::chrono::steady_clock::now();
  // Row 9 of 16 is rank 1's (rows 8..15).
  absl::StatusOr<std::vector<std::vector<Tensor>>> out = dp->Step(Feeds(Kind::kCtr, 2, 16, 9));
  // Told by rank 1, not by the deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("rank 1 (" + RankPlace().ToString() + ") failed"));
  EXPECT_THAT(out.status().message(), HasSubstr("op 'lookup_table'"));
  if (Mpi()->rank() == 1) {
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  } else {
    EXPECT_EQ(out.status().code(), absl::StatusCode::kAborted);
    EXPECT_THAT(out.status().message(), HasSubstr("process rank 1 of 2 aborted the job"));
  }
  // The group stays failed: later steps say why at once.
  EXPECT_THAT(dp->Step(Feeds(Kind::kCtr, 3, 16)).status().message(), HasSubstr("lookup_table"));
}

// Run alone under mpirun --enable-recovery: rank 1 dies at step 2.
TEST(MpiDataParallelFailure, KilledRankFailsTheOthersNamingIt) {
  Model m;
  std::unique_ptr<DataParallel> dp = AcrossProcesses(Kind::kMlp, &m, absl::Seconds(5));
  ASSERT_NE(dp, nullptr);
  Trajectory t;
  Train(Kind::kMlp, dp.get(), 0, 2, &t);
  if (Mpi()->rank() == 1) std::raise(SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<std::vector<Tensor>>> out =
      dp->Step(Feeds(Kind::kMlp, 2, BatchOf(Kind::kMlp)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("rank 1 of the mpi job did not arrive within 5s"));
  EXPECT_THAT(out.status().message(), HasSubstr("op c_"));  // the collective it waited in
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  absl::StatusOr<std::shared_ptr<tandem::MpiProcessGroup>> mpi =
      tandem::MpiProcessGroup::Init(&argc, &argv);
  if (!mpi.ok()) {
    std::fprintf(stderr, "%s\n", std::string(mpi.status().ToString()).c_str());
    return 2;
  }
  tandem::Mpi() = *std::move(mpi);
  const int result = RUN_ALL_TESTS();
  tandem::Mpi().reset();  // finalises MPI unless the group failed
  return result;
}
