#include "framework/parallel/collective_group.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

std::vector<Place> Hosts(int n) { return std::vector<Place>(n, CPUPlace()); }

// Runs fn(rank) on one thread per rank and returns their statuses.
template <typename Fn>
std::vector<absl::Status> OnEveryRank(int n, Fn fn) {
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { statuses[r] = fn(r); });
  for (std::thread& t : threads) t.join();
  return statuses;
}

CollectiveGroup::Call AllReduce(const std::string& key, float* in, float* out, int64_t n,
                                double scale = 1) {
  CollectiveGroup::Call call;
  call.kind = CollectiveKind::kAllReduce;
  call.op = "c_allreduce_sum";
  call.key = key;
  call.scale = scale;
  call.tensors = {{DataType::kFloat32, in, out, n}};
  return call;
}

TEST(CollectiveGroup, RegisteredUntilDestroyed) {
  std::shared_ptr<CollectiveGroup> g = CollectiveGroup::Create(Hosts(2));
  const int64_t id = g->id();
  EXPECT_EQ(CollectiveGroup::Find(id), g);
  EXPECT_EQ(g->size(), 2);
  g.reset();
  EXPECT_EQ(CollectiveGroup::Find(id), nullptr);
}

TEST(CollectiveGroup, AllReduceSumsInRankOrderInPlaceAndScales) {
  constexpr int kRanks = 4;
  std::shared_ptr<CollectiveGroup> g = CollectiveGroup::Create(Hosts(kRanks));
  // 1e8 + 1 - 1e8 + 0.5 in rank order is 0.5 in float32 (1e8 + 1 rounds to
  // 1e8); another order would give another value.
  std::vector<std::vector<float>> v = {{1e8f, 2}, {1, 4}, {-1e8f, 6}, {0.5f, 8}};
  std::vector<absl::Status> s = OnEveryRank(kRanks, [&](int r) {
    return g->Run(r, AllReduce("g", v[r].data(), v[r].data(), 2, /*scale=*/0.25));
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_OK(s[r]);
    EXPECT_EQ(v[r][0], 0.125f) << "rank " << r;
    EXPECT_EQ(v[r][1], 5.0f) << "rank " << r;
  }
}

TEST(CollectiveGroup, CallsMeetByKeyWhateverTheOrder) {
  std::shared_ptr<CollectiveGroup> g = CollectiveGroup::Create(Hosts(2));
  std::vector<std::vector<float>> a = {{1}, {2}}, b = {{10}, {20}};
  std::vector<absl::Status> s = OnEveryRank(2, [&](int r) -> absl::Status {
    // Rank 0 reduces "a" then "b", rank 1 "b" then "a": each runs the first
    // on a thread of its own so that neither blocks the other.
    const std::string first = r == 0 ? "a" : "b", second = r == 0 ? "b" : "a";
    auto& x = r == 0 ? a : b;
    auto& y = r == 0 ? b : a;
    absl::Status s1;
    std::thread t([&] { s1 = g->Run(r, AllReduce(first, x[r].data(), x[r].data(), 1)); });
    absl::Status s2 = g->Run(r, AllReduce(second, y[r].data(), y[r].data(), 1));
    t.join();
    return s1.ok() ? s2 : s1;
  });
  EXPECT_OK(s[0]);
  EXPECT_OK(s[1]);
  EXPECT_EQ(a[0][0], 3);
  EXPECT_EQ(a[1][0], 3);
  EXPECT_EQ(b[0][0], 30);
  EXPECT_EQ(b[1][0], 30);
}

TEST(CollectiveGroup, BroadcastAndAllGather) {
  std::shared_ptr<CollectiveGroup> g = CollectiveGroup::Create(Hosts(3));
  std::vector<std::vector<int64_t>> v = {{1, 2}, {3, 4}, {5, 6}};
  std::vector<std::vector<int64_t>> gathered(3, std::vector<int64_t>(6));
  std::vector<absl::Status> s = OnEveryRank(3, [&](int r) -> absl::Status {
    CollectiveGroup::Call gather;
    gather.kind = CollectiveKind::kAllGather;
    gather.op = "c_allgather";
    gather.key = "ids";
    gather.tensors = {{DataType::kInt64, v[r].data(), gathered[r].data(), 2}};
    RETURN_IF_ERROR(g->Run(r, gather));
    CollectiveGroup::Call bcast;
    bcast.kind = CollectiveKind::kBroadcast;
    bcast.op = "c_broadcast";
    bcast.key = "w";
    bcast.root = 1;
    bcast.tensors = {{DataType::kInt64, v[r].data(), v[r].data(), 2}};
    return g->Run(r, bcast);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_OK(s[r]);
    EXPECT_EQ(gathered[r], (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(v[r], (std::vector<int64_t>{3, 4}));
  }
}

TEST(CollectiveGroup, MismatchedCallsFailOnEveryRank) {
  std::shared_ptr<CollectiveGroup> g = CollectiveGroup::Create(Hosts(2));
  std::vector<float> x(3), y(3);
  std::vector<absl::Status> s = OnEveryRank(
      2, [&](int r) { return g->Run(r, AllReduce("g", x.data(), x.data(), r == 0 ? 3 : 2)); });
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(s[r], StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("rank 0 makes allreduce of float32[3] scale 1 root 0, "
                                         "rank 1 makes allreduce of float32[2]")));
  }
}

TEST(CollectiveGroup, MissingRankIsDeadlineExceededNamingIt) {
  std::shared_ptr<CollectiveGroup> g =
      CollectiveGroup::Create(Hosts(3), {.deadline = absl::Milliseconds(100)});
  std::vector<float> x(1);
  std::vector<absl::Status> s = OnEveryRank(2, [&](int r) {  // rank 2 never calls
    return g->Run(r, AllReduce("fc_w@GRAD", x.data(), x.data(), 1));
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(s[r], StatusIs(absl::StatusCode::kDeadlineExceeded,
                               HasSubstr("rank 2 did not arrive within 100ms")));
    EXPECT_THAT(s[r], StatusIs(absl::StatusCode::kDeadlineExceeded,
                               HasSubstr("op c_allreduce_sum 'fc_w@GRAD'")));
  }
  // Aborted until Reset: a late rank fails at once.
  EXPECT_THAT(g->Run(2, AllReduce("fc_w@GRAD", x.data(), x.data(), 1)),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("rank 2 did not arrive")));
  g->Reset();
  std::vector<std::vector<float>> v = {{1}, {2}, {3}};
  s = OnEveryRank(3, [&](int r) { return g->Run(r, AllReduce("k", v[r].data(), v[r].data(), 1)); });
  for (int r = 0; r < 3; ++r) {
    EXPECT_OK(s[r]);
    EXPECT_EQ(v[r][0], 6);
  }
}

TEST(CollectiveGroup, AbortWakesWaitersWithTheReason) {
  std::shared_ptr<CollectiveGroup> g = CollectiveGroup::Create(Hosts(2));  // 60 s deadline
  std::vector<float> x(1);
  const auto start = std::chrono::steady_clock::now();
  absl::Status waiter;
  std::thread t([&] { waiter = g->Run(0, AllReduce("g", x.data(), x.data(), 1)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  g->Abort(absl::InvalidArgumentError("rank 1 failed: op 'lookup_table' (#2) on cpu: bad id"));
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_THAT(waiter, StatusIs(absl::StatusCode::kAborted,
                               HasSubstr("on rank 0 of 2 (group " + std::to_string(g->id()) +
                                         ") gave up: rank 1 failed: op 'lookup_table'")));
}

TEST(CollectiveGroup, RankOutOfRangeAndIntegerScale) {
  std::shared_ptr<CollectiveGroup> g = CollectiveGroup::Create(Hosts(1));
  std::vector<float> x(1);
  EXPECT_THAT(g->Run(1, AllReduce("g", x.data(), x.data(), 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 1 is not in 0..0")));
  std::vector<int32_t> i = {3};
  CollectiveGroup::Call call = AllReduce("i", nullptr, nullptr, 1, 0.5);
  call.tensors = {{DataType::kInt32, i.data(), i.data(), 1}};
  EXPECT_THAT(g->Run(0, call), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("scale 0.5 needs a floating-point dtype")));
}

// Threads standing in for processes: rank r's ProcessGroup endpoint of a
// job whose exchanges meet in memory (each call a barrier of all ranks).
class ThreadJob {
 public:
  explicit ThreadJob(int n) : n_(n), parts_(n) {}

  class Endpoint final : public ProcessGroup {
   public:
    Endpoint(ThreadJob* job, int rank) : job_(job), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return job_->n_; }
    int local_rank() const override { return rank_; }
    std::string name() const override { return "threads"; }
    absl::Status AllGather(const void* in, int64_t bytes, void* out, absl::Duration,
                           const std::string&) override {
      return job_->Exchange(rank_, in, bytes, [&](const std::vector<std::string>& parts) {
        for (int r = 0; r < size(); ++r)
          std::memcpy(static_cast<char*>(out) + r * bytes, parts[r].data(), bytes);
      });
    }
    absl::Status Broadcast(void* buf, int64_t bytes, int root, absl::Duration,
                           const std::string&) override {
      return job_->Exchange(rank_, buf, bytes, [&](const std::vector<std::string>& parts) {
        std::memcpy(buf, parts[root].data(), bytes);
      });
    }
    void Abort(const absl::Status& why) override {
      std::lock_guard<std::mutex> lock(job_->mu_);
      if (job_->failure_.ok()) job_->failure_ = why;
      job_->cv_.notify_all();
    }
    absl::Status failure() const override {
      std::lock_guard<std::mutex> lock(job_->mu_);
      return job_->failure_;
    }

   private:
    ThreadJob* job_;
    int rank_;
  };

  std::shared_ptr<ProcessGroup> endpoint(int rank) {
    return std::make_shared<Endpoint>(this, rank);
  }

 private:
  template <typename Take>
  absl::Status Exchange(int rank, const void* in, int64_t bytes, Take take) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!failure_.ok()) return failure_;
    const int64_t round = round_;
    parts_[rank].assign(static_cast<const char*>(in), bytes);
    if (++arrived_ == n_) {
      arrived_ = 0;
      gathered_ = parts_;
      ++round_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return round_ != round || !failure_.ok(); });
    }
    if (round_ == round) return failure_;
    take(gathered_);
    return absl::OkStatus();
  }

  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int64_t round_ = 0;
  std::vector<std::string> parts_, gathered_;
  absl::Status failure_;
};

TEST(CollectiveGroupAcrossProcesses, SumsInRankOrderLikeOneProcess) {
  constexpr int kRanks = 4;
  ThreadJob job(kRanks);
  std::vector<std::shared_ptr<CollectiveGroup>> groups;
  for (int r = 0; r < kRanks; ++r) {
    groups.push_back(CollectiveGroup::CreateAcrossProcesses(CPUPlace(), job.endpoint(r)));
    EXPECT_EQ(groups[r]->size(), kRanks);
    EXPECT_NE(groups[r]->processes(), nullptr);
  }
  std::vector<std::vector<float>> v = {{1e8f, 2}, {1, 4}, {-1e8f, 6}, {0.5f, 8}};
  std::vector<absl::Status> s = OnEveryRank(kRanks, [&](int r) {
    return groups[r]->Run(r, AllReduce("g", v[r].data(), v[r].data(), 2, /*scale=*/0.25));
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_OK(s[r]);
    EXPECT_EQ(v[r][0], 0.125f) << "rank " << r;  // rank order: see the test above
    EXPECT_EQ(v[r][1], 5.0f) << "rank " << r;
  }
  // Broadcast from rank 2 and all-gather.
  std::vector<std::vector<int64_t>> b = {{0}, {0}, {42}, {0}};
  std::vector<std::vector<int64_t>> all(kRanks, std::vector<int64_t>(kRanks));
  s = OnEveryRank(kRanks, [&](int r) -> absl::Status {
    CollectiveGroup::Call call;
    call.kind = CollectiveKind::kBroadcast;
    call.op = "c_broadcast";
    call.key = "b";
    call.root = 2;
    call.tensors = {{DataType::kInt64, b[r].data(), b[r].data(), 1}};
    RETURN_IF_ERROR(groups[r]->Run(r, call));
    const int64_t mine = 10 + r;
    call.kind = CollectiveKind::kAllGather;
    call.op = "c_allgather";
    call.key = "a";
    call.root = 0;
    call.tensors = {{DataType::kInt64, &mine, all[r].data(), 1}};
    return groups[r]->Run(r, call);
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_OK(s[r]);
    EXPECT_EQ(b[r][0], 42) << "rank " << r;
    EXPECT_EQ(all[r], (std::vector<int64_t>{10, 11, 12, 13})) << "rank " << r;
  }
}

TEST(CollectiveGroupAcrossProcesses, CallsThatDoNotMatchFailOnEveryRankBeforeDataMoves) {
  ThreadJob job(2);
  std::vector<std::shared_ptr<CollectiveGroup>> groups = {
      CollectiveGroup::CreateAcrossProcesses(CPUPlace(), job.endpoint(0)),
      CollectiveGroup::CreateAcrossProcesses(CPUPlace(), job.endpoint(1))};
  std::vector<std::vector<float>> v = {{1, 2, 3}, {4, 5, 6}};
  std::vector<absl::Status> s = OnEveryRank(2, [&](int r) {
    // Rank 1 reduces 2 elements of another key: the calls disagree.
    return groups[r]->Run(r,
                          AllReduce(r == 0 ? "w@GRAD" : "b@GRAD", v[r].data(), v[r].data(), 3 - r));
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(s[r], StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("the ranks' calls do not match")))
        << "rank " << r;
    EXPECT_THAT(std::string(s[r].message()), HasSubstr("w@GRAD: allreduce of float32[3]"));
    EXPECT_THAT(std::string(s[r].message()), HasSubstr("b@GRAD: allreduce of float32[2]"));
  }
  EXPECT_EQ(v[0], (std::vector<float>{1, 2, 3}));  // untouched
  EXPECT_EQ(v[1], (std::vector<float>{4, 5, 6}));
  // A rank naming another rank than its process's is refused at once.
  float x = 1;
  EXPECT_THAT(groups[0]->Run(1, AllReduce("x", &x, &x, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("this process holds rank 0 of the threads job")));
}

TEST(CollectiveGroupAcrossProcesses, AbortOnOneProcessEndsTheGroupForGood) {
  ThreadJob job(2);
  std::shared_ptr<ProcessGroup> p0 = job.endpoint(0), p1 = job.endpoint(1);
  std::shared_ptr<CollectiveGroup> g0 = CollectiveGroup::CreateAcrossProcesses(CPUPlace(), p0);
  std::shared_ptr<CollectiveGroup> g1 = CollectiveGroup::CreateAcrossProcesses(CPUPlace(), p1);
  float x = 1;
  std::thread waiting([&] {
    const absl::Status s = g0->Run(0, AllReduce("w", &x, &x, 1));
    EXPECT_THAT(s.message(), HasSubstr("rank 1 (cpu) failed: bad id 7"));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  g1->Abort(absl::InvalidArgumentError("rank 1 (cpu) failed: bad id 7"));
  waiting.join();
  g0->Reset();
  g1->Reset();  // does not revive a group across processes
  EXPECT_THAT(std::string(g0->Run(0, AllReduce("w", &x, &x, 1)).message()), HasSubstr("bad id 7"));
  EXPECT_EQ(x, 1);
}

}  // namespace
}  // namespace tandem
