#include "backends/common/float_scratch.h"

#include <thread>

#include "gtest/gtest.h"

namespace tandem {
namespace {

// The tests share their thread's pool: each uses sizes no earlier test left.
TEST(FloatScratchTest, BlockGivenBackIsHandedOutAgain) {
  float* first = nullptr;
  {
    FloatScratch a(1000);
    first = a.data();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(a.capacity(), 1000);
    a.data()[999] = 1.0f;  // the whole block is usable
  }
  EXPECT_EQ(CachedFloatScratchOfThisThread(), 1000);
  FloatScratch b(600);  // at least half of 1000: the cached block
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(b.capacity(), 1000);
  EXPECT_EQ(CachedFloatScratchOfThisThread(), 0);
}

TEST(FloatScratchTest, SmallRequestDoesNotHoldALargeBlock) {
  { FloatScratch big(4000); }
  const int64_t cached = CachedFloatScratchOfThisThread();
  FloatScratch small(100);
  EXPECT_EQ(small.capacity(), 100);
  EXPECT_EQ(CachedFloatScratchOfThisThread(), cached);
}

TEST(FloatScratchTest, TwoBlocksHeldAtOnceAreDistinct) {
  FloatScratch a(256), b(256);
  EXPECT_NE(a.data(), b.data());
}

TEST(FloatScratchTest, SmallestFittingBlockIsChosen) {
  float* mid = nullptr;
  {
    FloatScratch large(19000), medium(11000);
    mid = medium.data();
  }
  FloatScratch c(10000);  // both fit within twice 10000: the smaller one
  EXPECT_EQ(c.data(), mid);
}

TEST(FloatScratchTest, PoolKeepsAtMostItsCap) {
  const int64_t cap_floats = kMaxCachedFloatScratchBytes / static_cast<int64_t>(sizeof(float));
  const int64_t before = CachedFloatScratchOfThisThread();
  { FloatScratch a(cap_floats / 2 + 1), b(cap_floats / 2 + 1); }
  // The second block given back would exceed the cap: freed, not kept.
  EXPECT_EQ(CachedFloatScratchOfThisThread(), before + cap_floats / 2 + 1);
  EXPECT_LE(CachedFloatScratchOfThisThread() * static_cast<int64_t>(sizeof(float)),
            kMaxCachedFloatScratchBytes);
}

TEST(FloatScratchTest, EachThreadHasItsOwnPool) {
  float* here = nullptr;
  {
    FloatScratch a(5000);
    here = a.data();
  }
  float* there = nullptr;
  std::thread other([&] {
    FloatScratch b(5000);  // this thread's pool is empty: a new block
    there = b.data();
  });
  other.join();
  EXPECT_NE(there, here);
  FloatScratch again(5000);
  EXPECT_EQ(again.data(), here);
}

TEST(FloatScratchTest, EmptyRequestHasNoBlock) {
  FloatScratch none(0);
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_EQ(none.capacity(), 0);
}

}  // namespace
}  // namespace tandem
