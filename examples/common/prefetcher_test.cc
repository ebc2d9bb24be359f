#include "examples/common/prefetcher.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(Prefetcher, YieldsEveryItemInOrderMadeOnAnotherThread) {
  const std::thread::id consumer = std::this_thread::get_id();
  std::atomic<int> made_elsewhere{0};
  Prefetcher<std::string> p(3, 40, 2, [&](int64_t i) {
    if (std::this_thread::get_id() != consumer) made_elsewhere++;
    return "item " + std::to_string(i * i);
  });
  for (int64_t i = 3; i <= 40; ++i) EXPECT_EQ(p.Take(i), "item " + std::to_string(i * i));
  EXPECT_EQ(made_elsewhere.load(), 38);
}

// While item i is made, at most `depth` items are made and not taken
// (taken lags the prefetcher's own count by at most the Take in progress).
TEST(Prefetcher, MakesAtMostDepthAheadOfTheConsumer) {
  constexpr int kDepth = 3;
  std::atomic<int64_t> taken{0}, furthest_ahead{0};
  Prefetcher<int64_t> p(1, 200, kDepth, [&](int64_t i) {
    const int64_t ahead = (i - 1) - taken.load();
    if (ahead > furthest_ahead.load()) furthest_ahead = ahead;
    return i;
  });
  for (int64_t i = 1; i <= 200; ++i) {
    if (i % 20 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let it run ahead
    EXPECT_EQ(p.Take(i), i);
    taken++;
  }
  EXPECT_LE(furthest_ahead.load(), kDepth);
  EXPECT_GE(furthest_ahead.load(), 1);  // it did work ahead
}

TEST(Prefetcher, StopsWhenDestroyedBeforeTheEnd) {
  std::atomic<int64_t> made{0};
  {
    Prefetcher<int64_t> p(1, 1 << 30, 2, [&](int64_t i) {
      made++;
      return i;
    });
    EXPECT_EQ(p.Take(1), 1);
  }
  EXPECT_LE(made.load(), 3);
}

TEST(PrefetcherDeathTest, TakingOutOfOrderIsABug) {
  Prefetcher<int64_t> p(1, 10, 2, [](int64_t i) { return i; });
  EXPECT_DEATH(p.Take(2), "out of order");
}

}  // namespace
}  // namespace tandem
