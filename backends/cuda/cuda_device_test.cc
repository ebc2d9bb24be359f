// The gpu device on a real GPU (skipped without one): its description,
// sync and async copies, streams and events ordering work, DeviceGuard
// switching and restoring the current device, and a second GPU working
// while the first is current.
#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <vector>

#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/gpu_test.h"
#include "framework/kernel/eager.h"

namespace tandem {
namespace cuda {
namespace {

using ::testing::MatchesRegex;

TEST_F(GpuTest, DescriptionNamesModelMemoryAndArch) {
  EXPECT_THAT(device_->Description(), MatchesRegex(".+ \\([0-9]+\\.[0-9] GiB, sm_[0-9]+\\)"));
  EXPECT_EQ(device_->place(), GPUPlace(0));
}

std::vector<float> Ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f - 3;
  return v;
}

TEST_F(GpuTest, SyncCopiesRoundTrip) {
  const size_t n = 1023, bytes = n * sizeof(float);
  const std::vector<float> src = Ramp(n);
  std::vector<float> back(n, 0);
  CachingAllocator* a = device_->allocator();
  ASSERT_OK_AND_ASSIGN(void* d1, a->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* d2, a->Allocate(bytes));
  ASSERT_OK(device_->Copy(CopyKind::kHostToDevice, d1, src.data(), bytes));
  ASSERT_OK(device_->Copy(CopyKind::kDeviceToDevice, d2, d1, bytes));
  ASSERT_OK(device_->Copy(CopyKind::kDeviceToHost, back.data(), d2, bytes));
  EXPECT_EQ(back, src);
  EXPECT_OK(device_->Copy(CopyKind::kHostToDevice, d1, src.data(), 0));
  a->Deallocate(d1, bytes);
  a->Deallocate(d2, bytes);
}

// What the exit hook does, so that compute-sanitizer's leak check sees only
// memory that tensors still hold.
TEST_F(GpuTest, ReleaseCachedResourcesFreesTheCacheAndKeepsBlocksInUse) {
  CachingAllocator* a = device_->allocator();
  CachingAllocator* host = device_->host_allocator();
  ASSERT_OK_AND_ASSIGN(void* kept, a->Allocate(4096));
  ASSERT_OK_AND_ASSIGN(void* cached, a->Allocate(size_t{8} << 20));
  ASSERT_OK_AND_ASSIGN(void* pinned, host->Allocate(1000));
  a->Deallocate(cached, size_t{8} << 20);
  host->Deallocate(pinned, 1000);
  ASSERT_GT(a->cached_bytes(), 0);
  ASSERT_GT(host->cached_bytes(), 0);
  ASSERT_OK(device_->WithCublas(device_->compute_stream(),
                                [](cublasHandle_t) { return absl::OkStatus(); }));
  const int64_t reserved = a->GetStats().bytes_reserved;
  ASSERT_OK(device_->ReleaseCachedResources());
  EXPECT_EQ(a->cached_bytes(), 0);
  EXPECT_EQ(host->cached_bytes(), 0);
  EXPECT_GE(reserved - a->GetStats().bytes_reserved, int64_t{8} << 20);  // the cached block
  // The block in use still works, and cuBLAS comes back on next use.
  const std::vector<float> src = Ramp(1024);
  std::vector<float> back(1024);
  ASSERT_OK(device_->Copy(CopyKind::kHostToDevice, kept, src.data(), 4096));
  ASSERT_OK(device_->Copy(CopyKind::kDeviceToHost, back.data(), kept, 4096));
  EXPECT_EQ(back, src);
  bool ran = false;
  EXPECT_OK(device_->WithCublas(device_->compute_stream(), [&](cublasHandle_t h) {
    ran = h != nullptr;
    return absl::OkStatus();
  }));
  EXPECT_TRUE(ran);
  a->Deallocate(kept, 4096);
}

TEST_F(GpuTest, SyncCopyWaitsForComputeStream) {
  const int64_t n = 1 << 24;
  ASSERT_OK_AND_ASSIGN(Tensor t,
                       Tensor::Allocate(device_->allocator(), DataType::kFloat32, Shape({n})));
  ASSERT_EQ(LaunchFill<float>(t.data<float>(), n, 2.5f, CudaStreamOf(device_->compute_stream())),
            cudaSuccess);
  std::vector<float> back(n);
  ASSERT_OK(device_->Copy(CopyKind::kDeviceToHost, back.data(), t.raw_data(), n * sizeof(float)));
  EXPECT_EQ(back.front(), 2.5f);
  EXPECT_EQ(back.back(), 2.5f);
}

TEST_F(GpuTest, AsyncCopiesStreamsAndEventsOrderWork) {
  const size_t n = 1 << 22, bytes = n * sizeof(float);
  CachingAllocator* h = device_->host_allocator();
  CachingAllocator* a = device_->allocator();
  ASSERT_OK_AND_ASSIGN(void* pinned_in, h->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* pinned_out, h->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* d1, a->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* d2, a->Allocate(bytes));
  const std::vector<float> src = Ramp(n);
  std::memcpy(pinned_in, src.data(), bytes);
  std::memset(pinned_out, 0, bytes);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s1, device_->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s2, device_->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> uploaded, device_->CreateEvent());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> done, device_->CreateEvent());
  ASSERT_OK(device_->CopyAsync(CopyKind::kHostToDevice, d1, pinned_in, bytes, s1.get()));
  ASSERT_OK(device_->RecordEvent(uploaded.get(), s1.get()));
  ASSERT_OK(device_->StreamWaitEvent(s2.get(), uploaded.get()));
  ASSERT_OK(device_->CopyAsync(CopyKind::kDeviceToDevice, d2, d1, bytes, s2.get()));
  ASSERT_OK(device_->CopyAsync(CopyKind::kDeviceToHost, pinned_out, d2, bytes, s2.get()));
  ASSERT_OK(device_->RecordEvent(done.get(), s2.get()));
  ASSERT_OK(device_->SynchronizeEvent(done.get()));
  EXPECT_EQ(std::memcmp(pinned_out, src.data(), bytes), 0);

  std::memset(pinned_out, 0, bytes);
  ASSERT_OK(
      device_->CopyAsync(CopyKind::kDeviceToHost, pinned_out, d1, bytes, device_->copy_stream()));
  ASSERT_OK(device_->SynchronizeStream(device_->copy_stream()));
  EXPECT_EQ(std::memcmp(pinned_out, src.data(), bytes), 0);
  EXPECT_OK(device_->Synchronize());

  h->Deallocate(pinned_in, bytes);
  h->Deallocate(pinned_out, bytes);
  a->Deallocate(d1, bytes);
  a->Deallocate(d2, bytes);
}

TEST_F(GpuTest, DeviceGuardSwitchesAndRestores) {
  int current = -1;
  {
    DeviceGuard guard(GPUPlace(0));
    ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, 0);
    if (GpuCount() > 1) {
      {
        DeviceGuard inner(GPUPlace(1));
        ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
        EXPECT_EQ(current, 1);
        ASSERT_OK_AND_ASSIGN(Device * d1, DeviceRegistry::Global().GetDevice(GPUPlace(1)));
        ASSERT_OK_AND_ASSIGN(void* p, d1->allocator()->Allocate(64));
        cudaPointerAttributes attr;
        ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
        EXPECT_EQ(attr.device, 1);
        d1->allocator()->Deallocate(p, 64);
      }
      ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
      EXPECT_EQ(current, 0);
    }
  }
}

TEST_F(GpuTest, SecondGpuWorksWhileFirstIsCurrent) {
  if (GpuCount() < 2) GTEST_SKIP() << "needs two GPUs";
  DeviceGuard guard(GPUPlace(0));
  ASSERT_OK_AND_ASSIGN(Device * d1, DeviceRegistry::Global().GetDevice(GPUPlace(1)));
  const size_t n = 4096, bytes = n * sizeof(float);
  const std::vector<float> src = Ramp(n);
  ASSERT_OK_AND_ASSIGN(void* p, d1->allocator()->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* pinned, d1->host_allocator()->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s, d1->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> e, d1->CreateEvent());
  ASSERT_OK(d1->Copy(CopyKind::kHostToDevice, p, src.data(), bytes));
  ASSERT_OK(d1->CopyAsync(CopyKind::kDeviceToHost, pinned, p, bytes, s.get()));
  ASSERT_OK(d1->RecordEvent(e.get(), s.get()));
  ASSERT_OK(d1->SynchronizeEvent(e.get()));
  EXPECT_EQ(std::memcmp(pinned, src.data(), bytes), 0);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);
  d1->allocator()->Deallocate(p, bytes);
  d1->host_allocator()->Deallocate(pinned, bytes);

  // Kernels (cuBLAS included) give the same results on both GPUs.
  OpDesc op;
  op.type = "matmul_grad";
  const EagerInputs in = {
      {"X", {Variable(Tensor::FromVector<float>(Shape({3, 5}), Ramp(15)))}},
      {"Y", {Variable(Tensor::FromVector<float>(Shape({2, 5, 4}), Ramp(40)))}},
      {"Out@GRAD", {Variable(Tensor::FromVector<float>(Shape({2, 3, 4}), Ramp(24)))}}};
  std::vector<std::vector<float>> results;
  for (int gpu : {0, 1}) {
    ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(op, GPUPlace(gpu), in));
    for (const char* arg : {"X@GRAD", "Y@GRAD"}) {
      const Tensor& t = out.at(arg)[0].tensor();
      EXPECT_EQ(t.place(), GPUPlace(gpu));
      ASSERT_OK_AND_ASSIGN(Tensor host, CopyTensorTo(t, CPUPlace()));
      results.push_back(host.ToVector<float>());
    }
  }
  EXPECT_EQ(results[0], results[2]);
  EXPECT_EQ(results[1], results[3]);
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
