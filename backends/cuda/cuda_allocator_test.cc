// The gpu's caching device allocator and pinned host allocator on a real
// device (skipped without a GPU): reuse, statistics, the limit, device
// out-of-memory, pinned memory. The caching logic itself is tested without
// a GPU in caching_allocator_test.cc.
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "backends/cuda/gpu_test.h"
#include "framework/kernel/eager.h"

namespace tandem {
namespace cuda {
namespace {

using ::testing::AllOf;

TEST_F(GpuTest, AllocatorCachesAndReuses) {
  CachingAllocator* a = device_->allocator();
  EXPECT_EQ(a->place(), GPUPlace(0));
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(1000));
  a->Deallocate(p, 1000);
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(900));
  EXPECT_EQ(q, p);
  ASSERT_OK_AND_ASSIGN(void* z, a->Allocate(0));
  EXPECT_NE(z, nullptr);
  EXPECT_NE(z, q);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, q), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attr.device, 0);
  a->Deallocate(q, 900);
  a->Deallocate(z, 0);
}

TEST_F(GpuTest, PeakAndReservedStats) {
  CachingAllocator* a = device_->allocator();
  const AllocatorStats before = a->GetStats();
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(3 << 20));
  const AllocatorStats during = a->GetStats();
  EXPECT_EQ(during.bytes_in_use, before.bytes_in_use + (3 << 20));
  EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
  EXPECT_GE(during.bytes_reserved, during.bytes_in_use);
  a->Deallocate(p, 3 << 20);
  EXPECT_EQ(a->GetStats().bytes_in_use, before.bytes_in_use);
  EXPECT_GE(a->GetStats().peak_bytes_in_use, before.bytes_in_use + (3 << 20));
}

TEST_F(GpuTest, LimitGivesResourceExhaustedWithNumbers) {
  CachingAllocator* a = device_->allocator();
  const int64_t in_use = a->GetStats().bytes_in_use;
  a->SetBytesLimit(in_use + (1 << 20));
  EXPECT_THAT(a->Allocate(2 << 20), StatusIs(absl::StatusCode::kResourceExhausted,
                                             AllOf(HasSubstr("out of memory on gpu:0"),
                                                   HasSubstr("requested 2097152 bytes (2.0 MiB)"),
                                                   HasSubstr("in use"), HasSubstr("limit"))));
  a->SetBytesLimit(0);
}

TEST_F(GpuTest, DeviceOutOfMemoryIsResourceExhaustedAndGpuStaysUsable) {
  EXPECT_THAT(device_->allocator()->Allocate(size_t{1} << 50),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("requested"), HasSubstr("cudaErrorMemoryAllocation"))));
  OpDesc op;
  op.type = "fill_constant";
  op.attrs["shape"] = std::vector<int64_t>{4};
  op.attrs["value"] = 1.0;
  EXPECT_OK(RunOpEager(op, GPUPlace(0), {}).status());
}

TEST_F(GpuTest, PinnedHostMemory) {
  CachingAllocator* h = device_->host_allocator();
  EXPECT_EQ(h->place(), CPUPlace());
  ASSERT_OK_AND_ASSIGN(void* p, h->Allocate(4096));
  std::memset(p, 7, 4096);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  h->Deallocate(p, 4096);
  ASSERT_OK_AND_ASSIGN(void* q, h->Allocate(4000));
  EXPECT_EQ(q, p);
  h->Deallocate(q, 4000);
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
