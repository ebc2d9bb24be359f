#include "backends/sim/sim_allocator.h"

#include "framework/memory/cpu_allocator.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

Place Sim(int index) { return Place(DeviceType::Register("sim", "SimPlace"), index); }

TEST(SimAllocator, OwnStatsSeparateFromHostMemory) {
  SimAllocator memory(Sim(0), 0);
  EXPECT_EQ(memory.Name(), "sim:0");
  EXPECT_EQ(memory.place(), Sim(0));
  const int64_t host_before = CpuAllocator::Default()->GetStats().bytes_in_use;
  ASSERT_OK_AND_ASSIGN(void* p, memory.Allocate(1000));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  AllocatorStats s = memory.GetStats();
  EXPECT_EQ(s.bytes_in_use, 1000);
  EXPECT_EQ(s.num_allocs, 1);
  EXPECT_EQ(CpuAllocator::Default()->GetStats().bytes_in_use, host_before);
  memory.Deallocate(p, 1000);
  s = memory.GetStats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.peak_bytes_in_use, 1000);
}

TEST(SimAllocator, OwnsExactlyItsLiveBlocks) {
  SimAllocator a(Sim(0), 0), b(Sim(1), 0);
  ASSERT_OK_AND_ASSIGN(void* p, a.Allocate(100));
  const char* c = static_cast<const char*>(p);
  EXPECT_TRUE(a.Owns(p, 100));
  EXPECT_TRUE(a.Owns(c + 40, 60));
  EXPECT_FALSE(a.Owns(c + 40, 61));
  EXPECT_FALSE(b.Owns(p, 1));
  int on_stack = 0;
  EXPECT_FALSE(a.Owns(&on_stack, sizeof(on_stack)));
  a.Deallocate(p, 100);
  EXPECT_FALSE(a.Owns(p, 1));
}

TEST(SimAllocator, ZeroBytesGivesDistinctPointers) {
  SimAllocator memory(Sim(0), 0);
  ASSERT_OK_AND_ASSIGN(void* p, memory.Allocate(0));
  ASSERT_OK_AND_ASSIGN(void* q, memory.Allocate(0));
  EXPECT_NE(p, q);
  memory.Deallocate(p, 0);
  memory.Deallocate(q, 0);
}

TEST(SimAllocator, LimitIsResourceExhaustedWithRequestedInUseAndLimit) {
  SimAllocator memory(Sim(1), 1000);
  ASSERT_OK_AND_ASSIGN(void* p, memory.Allocate(600));
  EXPECT_THAT(memory.Allocate(600),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "out of memory on sim:1: requested 600 bytes, in use 600 "
                       "bytes, limit 1000 bytes"));
  memory.SetBytesLimit(0);
  ASSERT_OK_AND_ASSIGN(void* q, memory.Allocate(600));
  memory.Deallocate(p, 600);
  memory.Deallocate(q, 600);
}

TEST(SimAllocatorDeathTest, FreeingForeignMemoryIsABug) {
  SimAllocator memory(Sim(0), 0);
  int on_stack = 0;
  EXPECT_DEATH(memory.Deallocate(&on_stack, sizeof(on_stack)), "does not match a live block");
}

}  // namespace
}  // namespace tandem
