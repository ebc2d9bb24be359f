#include "backends/cpu/cpu_policy.h"

#include <omp.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "backends/common/serial_policy.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

// The ranges ParallelFor hands out, sorted.
std::set<std::pair<int64_t, int64_t>> Ranges(int64_t n, int64_t grain) {
  std::mutex mu;
  std::set<std::pair<int64_t, int64_t>> ranges;
  CpuPolicy::ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mu);
    ranges.emplace(begin, end);
  });
  return ranges;
}

TEST(CpuPolicy, ParallelForCoversTheRangeInTasksOfAtLeastGrain) {
  for (const auto& [n, grain] :
       {std::pair<int64_t, int64_t>{0, 10}, {5, 10}, {100, 1}, {1000003, 1000}}) {
    const auto ranges = Ranges(n, grain);
    int64_t next = 0;
    for (const auto& [begin, end] : ranges) {
      EXPECT_EQ(begin, next) << "n " << n;
      EXPECT_GT(end, begin);
      if (ranges.size() > 1) {
        EXPECT_GE(end - begin, grain);
      }
      next = end;
    }
    EXPECT_EQ(next, n);
    EXPECT_LE(static_cast<int>(ranges.size()), std::max(1, omp_get_max_threads()));
  }
  // Below the grain: one range on the calling thread.
  EXPECT_EQ(Ranges(5, 10).size(), 1u);
}

TEST(CpuPolicy, NestedParallelForRunsSerially) {
  std::atomic<int> inner_calls{0};
  CpuPolicy::ParallelFor(4, 1, [&](int64_t begin, int64_t end) {
    CpuPolicy::ParallelFor(1000, 1, [&](int64_t b, int64_t e) {
      EXPECT_EQ(e - b, 1000);
      ++inner_calls;
    });
  });
  EXPECT_GE(inner_calls.load(), 1);
}

TEST(CpuPolicy, OneDnnSgemmMatchesBlockedGemmAndIgnoresCWhenBetaIsZero) {
  const int64_t m = 37, n = 29, k = 53;
  std::vector<float> a(k * m), b(n * k);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 13) / 4 - 1;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 7) / 3 - 1;
  std::vector<float> got(m * n, NAN), want(m * n, NAN);
  GemmArgs<float> g;
  g.trans_a = true;  // A is k x m
  g.trans_b = true;  // B is n x k
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = 0.5f;
  g.a = a.data();
  g.lda = m;
  g.b = b.data();
  g.ldb = k;
  g.ldc = n;
  g.c = got.data();
  ASSERT_OK(CpuPolicy::Gemm(g));
  g.c = want.data();
  ASSERT_OK(SerialPolicy::Gemm(g));
  for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << i;
}

TEST(CpuPolicy, OneDnnErrorsBecomeInternalWithTheCall) {
  const float a = 1, b = 1;
  float c = 0;
  GemmArgs<float> g;
  g.m = 1;
  g.n = 1;
  g.k = 1;
  g.a = &a;
  g.lda = 0;  // invalid: shorter than a row
  g.b = &b;
  g.ldb = 1;
  g.c = &c;
  g.ldc = 1;
  EXPECT_THAT(CpuPolicy::Gemm(g),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("cpu_policy.cc:"), HasSubstr("dnnl_sgemm("),
                             HasSubstr("invalid_arguments"))));
}

TEST(CpuPolicy, DoubleGemmIsThreadedBlockedGemm) {
  const int64_t m = 130, n = 260, k = 70;
  std::vector<double> a(m * k), b(k * n), got(m * n), want(m * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(i);
  GemmArgs<double> g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a.data();
  g.lda = k;
  g.b = b.data();
  g.ldb = n;
  g.ldc = n;
  g.c = got.data();
  ASSERT_OK(CpuPolicy::Gemm(g));
  g.c = want.data();
  ASSERT_OK(SerialPolicy::Gemm(g));
  EXPECT_EQ(got, want);  // same blocking, same order of additions
}

}  // namespace
}  // namespace tandem
