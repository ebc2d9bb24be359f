#include "framework/memory/allocator.h"

#include <cstdint>

#include "framework/memory/cpu_allocator.h"
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
                       AllOf(HasSubstr("out of memory on cpu"),
                             HasSubstr("requested 2000 bytes"),
                             HasSubstr("in use 3000 bytes"),
                             HasSubstr("limit 4096 bytes"))));
  EXPECT_EQ(a.GetStats().bytes_in_use, 3000);  // failed call left no trace
  a.Deallocate(p, 3000);
  ASSERT_OK_AND_ASSIGN(void* r, a.Allocate(4096));
  a.Deallocate(r, 4096);
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
