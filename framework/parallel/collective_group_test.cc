#include "framework/parallel/collective_group.h"

#include <chrono>
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

}  // namespace
}  // namespace tandem
