#include "backends/cuda/caching_allocator.h"

#include <cstdlib>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace cuda {
namespace {

using ::testing::AllOf;

// Host memory with a capacity, counting calls; the counters outlive it.
struct RawCounters {
  int allocs = 0;
  int frees = 0;
  int64_t outstanding = 0;
};

class FakeRaw : public RawMemory {
 public:
  FakeRaw(RawCounters* counters, int64_t capacity, absl::Status failure = absl::OkStatus())
      : c_(counters), capacity_(capacity), failure_(std::move(failure)) {}

  absl::StatusOr<void*> Alloc(size_t bytes) override {
    if (!failure_.ok()) return failure_;
    if (c_->outstanding + static_cast<int64_t>(bytes) > capacity_) {
      return absl::ResourceExhaustedError("fake device is full");
    }
    ++c_->allocs;
    c_->outstanding += bytes;
    return std::malloc(bytes);
  }
  void Free(void* ptr, size_t bytes) override {
    ++c_->frees;
    c_->outstanding -= bytes;
    std::free(ptr);
  }

 private:
  RawCounters* c_;
  int64_t capacity_;
  absl::Status failure_;
};

std::unique_ptr<CachingAllocator> Make(RawCounters* c, int64_t capacity = int64_t{1} << 30,
                                       int64_t limit = 0) {
  return std::make_unique<CachingAllocator>("sim:0", Place(),
                                            std::make_unique<FakeRaw>(c, capacity), limit);
}

TEST(CachingAllocator, RoundsSmallTo512AndLargeTo2MiB) {
  EXPECT_EQ(CachingAllocator::RoundSize(0), 512u);
  EXPECT_EQ(CachingAllocator::RoundSize(1), 512u);
  EXPECT_EQ(CachingAllocator::RoundSize(513), 1024u);
  EXPECT_EQ(CachingAllocator::RoundSize(1 << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::RoundSize((1 << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(CachingAllocator::RoundSize(size_t{5} << 20), size_t{6} << 20);
}

TEST(CachingAllocator, ReusesFreedBlocks) {
  RawCounters c;
  auto a = Make(&c);
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(1000));
  a->Deallocate(p, 1000);
  EXPECT_EQ(a->cached_bytes(), 1024);
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(900));
  EXPECT_EQ(q, p);
  EXPECT_EQ(c.allocs, 1);
  EXPECT_EQ(a->cached_bytes(), 0);
  a->Deallocate(q, 900);
}

TEST(CachingAllocator, BlocksFreedWhileHoldingAreNotReusedUntilReleased) {
  RawCounters c;
  auto a = Make(&c);
  ASSERT_OK_AND_ASSIGN(void* before, a->Allocate(1000));
  a->BeginHolding();
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(1000));
  a->Deallocate(p, 1000);
  a->Deallocate(before, 1000);
  const std::vector<CachingAllocator::HeldBlock> held = a->EndHolding();
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].ptr, p);
  EXPECT_EQ(held[0].size, 1024u);
  EXPECT_EQ(a->cached_bytes(), 0);
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(1000));  // a new block, not p or before
  EXPECT_NE(q, p);
  EXPECT_NE(q, before);
  EXPECT_EQ(c.allocs, 3);
  a->EmptyCache();  // held blocks are not the cache's to free
  EXPECT_EQ(c.frees, 0);
  a->ReleaseHeld(held);
  EXPECT_EQ(a->cached_bytes(), 2048);
  ASSERT_OK_AND_ASSIGN(void* r, a->Allocate(1000));
  EXPECT_TRUE(r == p || r == before);
  a->Deallocate(q, 1000);
  a->Deallocate(r, 1000);
}

TEST(CachingAllocator, BestFitWithBoundedWaste) {
  RawCounters c;
  auto a = Make(&c);
  ASSERT_OK_AND_ASSIGN(void* small, a->Allocate(1024));
  ASSERT_OK_AND_ASSIGN(void* mid, a->Allocate(2048));
  ASSERT_OK_AND_ASSIGN(void* big, a->Allocate(4096));
  a->Deallocate(big, 4096);
  a->Deallocate(small, 1024);
  a->Deallocate(mid, 2048);
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(1500));  // 1536: 2048 fits best
  EXPECT_EQ(p, mid);
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(100));  // 512: 1024 is at most twice
  EXPECT_EQ(q, small);
  ASSERT_OK_AND_ASSIGN(void* r, a->Allocate(512));  // 4096 would waste too much
  EXPECT_NE(r, big);
  EXPECT_EQ(c.allocs, 4);
  a->Deallocate(p, 1500);
  a->Deallocate(q, 100);
  a->Deallocate(r, 512);
}

TEST(CachingAllocator, ZeroBytesGivesUniquePointers) {
  RawCounters c;
  auto a = Make(&c);
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(0));
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(0));
  EXPECT_NE(p, nullptr);
  EXPECT_NE(p, q);
  a->Deallocate(p, 0);
  a->Deallocate(q, 0);
}

TEST(CachingAllocator, StatsCountRequestedBytesAndReserved) {
  RawCounters c;
  auto a = Make(&c);
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(1000));
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(3000));
  a->Deallocate(p, 1000);
  AllocatorStats s = a->GetStats();
  EXPECT_EQ(s.bytes_in_use, 3000);
  EXPECT_EQ(s.peak_bytes_in_use, 4000);
  EXPECT_EQ(s.bytes_reserved, 1024 + 3072);
  EXPECT_EQ(s.num_allocs, 2);
  a->Deallocate(q, 3000);
  a->EmptyCache();
  s = a->GetStats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.bytes_reserved, 0);
  EXPECT_EQ(c.frees, 2);
  EXPECT_EQ(c.outstanding, 0);
}

TEST(CachingAllocator, LimitGivesResourceExhaustedWithNumbers) {
  RawCounters c;
  auto a = Make(&c);
  a->SetBytesLimit(4096);
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(3000));
  EXPECT_THAT(a->Allocate(2000),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("out of memory on cpu"), HasSubstr("requested 2000 bytes"),
                             HasSubstr("in use 3000 bytes"), HasSubstr("limit 4096 bytes"))));
  EXPECT_EQ(a->GetStats().bytes_in_use, 3000);
  a->Deallocate(p, 3000);
  a->SetBytesLimit(0);
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(1 << 20));
  a->Deallocate(q, 1 << 20);
}

TEST(CachingAllocator, NewBlockOverLimitFreesCacheFirst) {
  RawCounters c;
  auto a = Make(&c, int64_t{1} << 30, /*limit=*/4000);
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(3000));  // 3072-byte block
  a->Deallocate(p, 3000);
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(1000));  // 1024: 3072 is too big
  EXPECT_EQ(c.frees, 1);
  EXPECT_EQ(a->GetStats().bytes_reserved, 1024);
  a->Deallocate(q, 1000);
}

TEST(CachingAllocator, OutOfMemoryFreesCacheAndRetries) {
  RawCounters c;
  auto a = Make(&c, /*capacity=*/4096);
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(2048));
  a->Deallocate(p, 2048);
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(3072));
  EXPECT_EQ(c.frees, 1);
  EXPECT_EQ(c.outstanding, 3072);
  EXPECT_THAT(a->Allocate(2048),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("requested 2048 bytes"), HasSubstr("in use 3072 bytes"),
                             HasSubstr("fake device is full"))));
  EXPECT_EQ(a->GetStats().bytes_in_use, 3072);
  a->Deallocate(q, 3072);
}

TEST(CachingAllocator, OtherRawErrorsPassThrough) {
  RawCounters c;
  CachingAllocator a("sim:0", Place(),
                     std::make_unique<FakeRaw>(&c, 1 << 20, absl::InternalError("broken")), 0);
  EXPECT_THAT(a.Allocate(10), StatusIs(absl::StatusCode::kInternal, "broken"));
  EXPECT_EQ(a.GetStats().bytes_in_use, 0);
}

TEST(CachingAllocator, DestructorFreesCache) {
  RawCounters c;
  {
    auto a = Make(&c);
    ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(10));
    a->Deallocate(p, 10);
  }
  EXPECT_EQ(c.frees, 1);
  EXPECT_EQ(c.outstanding, 0);
}

TEST(CachingAllocator, ThreadSafe) {
  RawCounters c;
  auto a = Make(&c);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&a, t] {
      for (int i = 0; i < 2000; ++i) {
        const size_t n = 100 * (1 + (i + t) % 7);
        absl::StatusOr<void*> p = a->Allocate(n);
        ASSERT_TRUE(p.ok());
        a->Deallocate(*p, n);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(a->GetStats().bytes_in_use, 0);
  EXPECT_LE(c.allocs, 4 * 7);
}

TEST(CachingAllocatorDeathTest, ForeignPointerIsABug) {
  RawCounters c;
  auto a = Make(&c);
  int x;
  EXPECT_DEATH(a->Deallocate(&x, 4), "did not hand out");
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
