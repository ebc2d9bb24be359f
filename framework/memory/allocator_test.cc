#include "framework/memory/allocator.h"

#include <cstdint>
#include <vector>

#include "framework/memory/cpu_allocator.h"
#include "framework/testing/fault_injection.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

TEST(CpuAllocator, TracksInUseAndPeak) {
  CpuAllocator a;
  ASSERT_OK_AND_ASSIGN(void* p, a.Allocate(1000));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  ASSERT_OK_AND_ASSIGN(void* q, a.Allocate(24));
  EXPECT_EQ(a.GetStats().bytes_in_use, 1024);
  a.Deallocate(p, 1000);
  EXPECT_EQ(a.GetStats().bytes_in_use, 24);
  EXPECT_EQ(a.GetStats().peak_bytes_in_use, 1024);
  EXPECT_EQ(a.GetStats().num_allocs, 2);
  a.Deallocate(q, 24);
  EXPECT_EQ(a.GetStats().bytes_in_use, 0);
}

TEST(CpuAllocator, LimitGivesResourceExhaustedWithNumbers) {
  CpuAllocator a(/*bytes_limit=*/4096);
  ASSERT_OK_AND_ASSIGN(void* p, a.Allocate(3000));
  EXPECT_THAT(a.Allocate(2000),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("out of memory on cpu"), HasSubstr("requested 2000 bytes"),
                             HasSubstr("in use 3000 bytes"), HasSubstr("limit 4096 bytes"))));
  EXPECT_EQ(a.GetStats().bytes_in_use, 3000);  // failed call left no trace
  a.Deallocate(p, 3000);
  ASSERT_OK_AND_ASSIGN(void* r, a.Allocate(4096));
  a.Deallocate(r, 4096);
}

TEST(CpuAllocator, ReusesFreedLargeBlocksOfTheSameSize) {
  CpuAllocator a;
  const size_t big = CpuAllocator::kCacheMinBytes + 100;
  ASSERT_OK_AND_ASSIGN(void* p, a.Allocate(big));
  a.Deallocate(p, big);
  // Cached: reserved but not in use.
  EXPECT_EQ(a.GetStats().bytes_in_use, 0);
  EXPECT_EQ(a.GetStats().bytes_reserved, static_cast<int64_t>(big + 28));  // rounded to 64
  ASSERT_OK_AND_ASSIGN(void* other, a.Allocate(big + 64));  // another size: fresh memory
  EXPECT_NE(other, p);
  ASSERT_OK_AND_ASSIGN(void* again, a.Allocate(big));
  EXPECT_EQ(again, p);
  EXPECT_EQ(a.GetStats().bytes_in_use, static_cast<int64_t>(2 * big + 64));
  a.Deallocate(other, big + 64);
  a.Deallocate(again, big);
  a.ReleaseCached();
  EXPECT_EQ(a.GetStats().bytes_reserved, 0);
  // Blocks between the small and the large sizes are not cached.
  ASSERT_OK_AND_ASSIGN(void* medium, a.Allocate(CpuAllocator::kSmallMaxBytes + 1));
  a.Deallocate(medium, CpuAllocator::kSmallMaxBytes + 1);
  EXPECT_EQ(a.GetStats().bytes_reserved, 0);
}

TEST(CpuAllocator, ReusesFreedSmallBlocksOfTheSameSizeClass) {
  CpuAllocator a;
  ASSERT_OK_AND_ASSIGN(void* p, a.Allocate(4));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  a.Deallocate(p, 4);
  EXPECT_EQ(a.GetStats().bytes_in_use, 0);
  EXPECT_EQ(a.GetStats().bytes_reserved, 64);         // cached, rounded to 64
  ASSERT_OK_AND_ASSIGN(void* other, a.Allocate(65));  // the 128-byte class: fresh memory
  EXPECT_NE(other, p);
  ASSERT_OK_AND_ASSIGN(void* again, a.Allocate(60));  // the 64-byte class
  EXPECT_EQ(again, p);
  EXPECT_EQ(a.GetStats().bytes_in_use, 125);
  EXPECT_EQ(a.GetStats().bytes_reserved, 125);
  a.Deallocate(other, 65);
  a.Deallocate(again, 60);
  EXPECT_EQ(a.GetStats().bytes_reserved, 192);
  a.ReleaseCached();
  EXPECT_EQ(a.GetStats().bytes_reserved, 0);
  // The cache is bounded: past kSmallCacheMaxBytes, freed blocks go back.
  std::vector<void*> blocks;
  const size_t n = CpuAllocator::kSmallCacheMaxBytes / CpuAllocator::kSmallMaxBytes + 3;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_OK_AND_ASSIGN(void* b, a.Allocate(CpuAllocator::kSmallMaxBytes));
    blocks.push_back(b);
  }
  for (void* b : blocks) a.Deallocate(b, CpuAllocator::kSmallMaxBytes);
  EXPECT_EQ(a.GetStats().bytes_reserved, static_cast<int64_t>(CpuAllocator::kSmallCacheMaxBytes));
  a.ReleaseCached();
}

TEST(CpuAllocator, HugeBlocksAre2MiBAlignedAndRounded) {
  CpuAllocator a;
  const size_t bytes = CpuAllocator::kHugePageMinBytes + 1;
  ASSERT_OK_AND_ASSIGN(void* p, a.Allocate(bytes));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % CpuAllocator::kHugePageBytes, 0u);
  static_cast<char*>(p)[bytes - 1] = 1;  // the block's last byte is ours
  EXPECT_EQ(a.GetStats().bytes_in_use, static_cast<int64_t>(bytes));
  a.Deallocate(p, bytes);
  // Cached at its rounded size: the next 2 MiB multiple.
  EXPECT_EQ(a.GetStats().bytes_reserved,
            static_cast<int64_t>(CpuAllocator::kHugePageMinBytes + CpuAllocator::kHugePageBytes));
  a.ReleaseCached();
}

TEST(Buffer, FreesOnDestruction) {
  CpuAllocator a;
  {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Buffer> b, Buffer::Allocate(&a, 512));
    EXPECT_EQ(b->size(), 512u);
    EXPECT_EQ(b->place(), CPUPlace());
    EXPECT_EQ(a.GetStats().bytes_in_use, 512);
  }
  EXPECT_EQ(a.GetStats().bytes_in_use, 0);
}

TEST(HumanBytes, Formats) {
  EXPECT_EQ(HumanBytes(12), "12 bytes");
  EXPECT_EQ(HumanBytes(1536), "1536 bytes (1.5 KiB)");
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

TEST(AllocationFaultInjectorTest, FailsExactlyTheNthAllocationAndAccountsNothingForIt) {
  CpuAllocator allocator;
  std::vector<void*> got;
  {
    AllocationFaultInjector inject(/*fail_at=*/2);
    absl::StatusOr<void*> a = allocator.Allocate(64);
    ASSERT_OK(a.status());
    got.push_back(*a);
    EXPECT_FALSE(inject.fired());
    absl::StatusOr<void*> b = allocator.Allocate(100);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(b.status().message(), "injected allocation failure #2: 100 bytes on cpu");
    EXPECT_TRUE(inject.fired());
    EXPECT_EQ(allocator.GetStats().bytes_in_use, 64);
    EXPECT_EQ(allocator.GetStats().num_allocs, 1);
    absl::StatusOr<void*> c = allocator.Allocate(32);
    ASSERT_OK(c.status());
    got.push_back(*c);
    EXPECT_EQ(inject.allocations(), 3);
  }
  // Removed with the injector: nothing counts or fails any more.
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<void*> p = allocator.Allocate(8);
    ASSERT_OK(p.status());
    allocator.Deallocate(*p, 8);
  }
  allocator.Deallocate(got[0], 64);
  allocator.Deallocate(got[1], 32);
  EXPECT_EQ(allocator.GetStats().bytes_in_use, 0);
}

}  // namespace
}  // namespace tandem
