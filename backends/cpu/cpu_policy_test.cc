#include "backends/cpu/cpu_policy.h"

#include <gflags/gflags.h>
#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "backends/common/serial_policy.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

DECLARE_int32(cpu_threads);

namespace tandem {
namespace {

using ::testing::AllOf;

// C[m, n] = A[m, k] * B[k, n], all row-major and dense; the caller sets g.c.
template <typename T>
GemmArgs<T> RowMajorGemm(int64_t m, int64_t n, int64_t k, const std::vector<T>& a,
                         const std::vector<T>& b) {
  GemmArgs<T> g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a.data();
  g.lda = k;
  g.b = b.data();
  g.ldb = n;
  g.ldc = n;
  return g;
}

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

TEST(CpuPolicy, ThreadsForWorkGivesEachThreadAtLeastTheMinimum) {
  EXPECT_EQ(ThreadsForWork(0, 100, 16), 1);
  EXPECT_EQ(ThreadsForWork(199, 100, 16), 1);
  EXPECT_EQ(ThreadsForWork(200, 100, 16), 2);
  EXPECT_EQ(ThreadsForWork(int64_t{1} << 40, 100, 16), 16);
  EXPECT_EQ(ThreadsForWork(1000, 100, 0), 1);  // no threads allowed: the caller's
  EXPECT_EQ(ThreadsForWork(5, 0, 16), 5);      // no minimum: one unit each
  // The fashion_mnist first layer's product, x[64,784] * W[784,256]: 6 of
  // 16 threads, not all 16; the next layer's [64,256] * [256,128]: 1.
  EXPECT_EQ(ThreadsForWork(2 * 64 * 784 * 256, kMinFlopsPerThread, 16), 6);
  EXPECT_EQ(ThreadsForWork(2 * 64 * 256 * 128, kMinFlopsPerThread, 16), 1);
}

TEST(CpuPolicy, CpuQuotaThreadsRoundsTheQuotaUp) {
  EXPECT_EQ(CpuQuotaThreads("max 100000\n"), 0);
  EXPECT_EQ(CpuQuotaThreads("200000 100000\n"), 2);
  EXPECT_EQ(CpuQuotaThreads("150000 100000"), 2);
  EXPECT_EQ(CpuQuotaThreads("50000 100000"), 1);
  EXPECT_EQ(CpuQuotaThreads("-1\n 100000\n"), 0);  // cgroup v1: no quota
  EXPECT_EQ(CpuQuotaThreads(""), 0);
  EXPECT_EQ(CpuQuotaThreads("100000"), 0);
  EXPECT_EQ(CpuQuotaThreads("a b"), 0);
  EXPECT_EQ(CpuQuotaThreads("100000 0"), 0);
}

TEST(CpuPolicy, CpuThreadsFlagPinsTheTeamWithinTheHost) {
  gflags::FlagSaver saver;
  const int automatic = CpuMaxThreads();
  EXPECT_GE(automatic, 1);
  EXPECT_LE(automatic, omp_get_max_threads());
  EXPECT_LE(automatic, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  FLAGS_cpu_threads = 1;
  EXPECT_EQ(CpuMaxThreads(), 1);
  EXPECT_EQ(Ranges(1000, 1).size(), 1u);
  FLAGS_cpu_threads = 100000;  // more than any host here has
  EXPECT_LE(CpuMaxThreads(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_EQ(gflags::SetCommandLineOption("cpu_threads", "-1"), "");  // rejected
  EXPECT_EQ(FLAGS_cpu_threads, 100000);
}

TEST(CpuPolicy, SgemmResultDoesNotDependOnTheThreadCountBeyondRounding) {
  // The fashion_mnist first layer: x[64,784] * W[784,256].
  const int64_t m = 64, n = 256, k = 784;
  std::vector<float> a(m * k), b(k * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<float>(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(static_cast<float>(i));
  std::vector<float> automatic(m * n, NAN), one(m * n, NAN);
  GemmArgs<float> g = RowMajorGemm(m, n, k, a, b);
  g.c = automatic.data();
  ASSERT_OK(CpuPolicy::Gemm(g));
  gflags::FlagSaver saver;
  FLAGS_cpu_threads = 1;
  g.c = one.data();
  ASSERT_OK(CpuPolicy::Gemm(g));
  // Equal bits on this 2-core host; a team that splits k may round
  // differently, so allow float rounding of a 784-term sum.
  for (int64_t i = 0; i < m * n; ++i) {
    ASSERT_NEAR(automatic[i], one[i], 1e-5f * (1 + std::abs(one[i]))) << i;
  }
}

TEST(CpuPolicy, ScopedDnnlThreadsSizesTheTeamAndRestoresIt) {
  const int before = omp_get_max_threads();
  {
    const ScopedDnnlThreads threads(10, 100);
    EXPECT_EQ(omp_get_max_threads(), 1);
    {
      const ScopedDnnlThreads all(int64_t{1} << 40, 1);
      EXPECT_EQ(omp_get_max_threads(), CpuMaxThreads());
    }
    EXPECT_EQ(omp_get_max_threads(), 1);
  }
  EXPECT_EQ(omp_get_max_threads(), before);
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

// oneDNN's generated f32 GEMM kernels (before 3.12) point the stack pointer
// into the heap, so a signal handled inside one corrupts it (glibc then
// aborts: "corrupted size vs. prev_size"). With the guard, the signals a
// thread sends the process every 50 us while 256 x 256 products run wait
// for the products to end: the handler still runs (the signals are not
// lost), the heap stays whole and the products right; outside the guard
// the thread's mask is as it was.
std::atomic<int64_t> signals_handled{0};

TEST(CpuPolicy, SignalsDuringOneDnnGemmWaitForItToEnd) {
  struct sigaction action = {}, previous = {};
  action.sa_handler = [](int) { signals_handled.fetch_add(1, std::memory_order_relaxed); };
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
  sigset_t before, after;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  const int64_t n = 256;
  std::vector<float> a(n * n, 0.01f), b(n * n, 0.02f), c(n * n);
  GemmArgs<float> g;
  g.m = g.n = g.k = n;
  g.a = a.data();
  g.lda = n;
  g.b = b.data();
  g.ldb = n;
  g.c = c.data();
  g.ldc = n;
  std::atomic<bool> done{false};
  std::thread sender([&] {
    while (!done.load()) {
      kill(getpid(), SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  for (int i = 0; i < 400; ++i) {
    ASSERT_OK(CpuPolicy::Gemm(g));
    ASSERT_NEAR(c[i % (n * n)], n * 0.01f * 0.02f, 1e-5) << i;
  }
  done = true;
  sender.join();
  pthread_sigmask(SIG_SETMASK, nullptr, &after);
  EXPECT_EQ(sigismember(&after, SIGUSR1), sigismember(&before, SIGUSR1));
  EXPECT_EQ(sigismember(&after, SIGINT), sigismember(&before, SIGINT));
  // The last signals may still be on their way: let them land.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GT(signals_handled.load(), 0);
  sigaction(SIGUSR1, &previous, nullptr);
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
  GemmArgs<double> g = RowMajorGemm(m, n, k, a, b);
  g.c = got.data();
  ASSERT_OK(CpuPolicy::Gemm(g));
  g.c = want.data();
  ASSERT_OK(SerialPolicy::Gemm(g));
  EXPECT_EQ(got, want);  // same blocking, same order of additions
}

}  // namespace
}  // namespace tandem
