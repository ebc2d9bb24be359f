#include "framework/runtime/host_worker_pool.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <set>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(HostWorkerPoolTest, RunsEveryTaskOnceAndDestructorWaits) {
  std::atomic<int> sum{0};
  {
    HostWorkerPool pool(3);
    EXPECT_EQ(pool.size(), 3);
    for (int i = 1; i <= 1000; ++i) pool.Submit([&sum, i](int) { sum += i; });
  }
  EXPECT_EQ(sum.load(), 500500);
}

TEST(HostWorkerPoolTest, TasksRunConcurrentlyOnDistinctWorkers) {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  std::set<int> workers;
  // Declared last, destroyed first: its workers are joined before the
  // state their tasks still touch (a woken task re-locks `mu`) goes away.
  HostWorkerPool pool(2);
  for (int t = 0; t < 2; ++t) {
    pool.Submit([&](int worker) {
      std::unique_lock<std::mutex> lock(mu);
      workers.insert(worker);
      ++arrived;
      cv.notify_all();
      // Both tasks must be running at once for either to get past here.
      cv.wait(lock, [&] { return arrived == 2; });
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return arrived == 2; });
  EXPECT_EQ(workers, (std::set<int>{0, 1}));
}

TEST(HostWorkerPoolTest, DefaultSizeIsOneUnlessTheEnvironmentSaysOtherwise) {
  unsetenv("TANDEM_HOST_WORKERS");
  const int n = HostWorkerPool::DefaultSize();
  EXPECT_EQ(n, 1);
  setenv("TANDEM_HOST_WORKERS", "5", 1);
  EXPECT_EQ(HostWorkerPool::DefaultSize(), 5);
  setenv("TANDEM_HOST_WORKERS", "0", 1);  // out of range: the default, with a warning
  EXPECT_EQ(HostWorkerPool::DefaultSize(), n);
  unsetenv("TANDEM_HOST_WORKERS");
}

}  // namespace
}  // namespace tandem
