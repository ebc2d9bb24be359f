// GpuTest: a fixture for tests that need gpu:0, skipped (GTEST_SKIP) when
// the machine has no GPU.
//
//   TEST_F(GpuTest, PinnedHostMemory) { ... device_->host_allocator() ... }
//
// Test-only; the device lives until the process exits.
#ifndef TANDEM_BACKENDS_CUDA_GPU_TEST_H_
#define TANDEM_BACKENDS_CUDA_GPU_TEST_H_

#include "backends/cuda/cuda_device.h"
#include "framework/device/device_registry.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace cuda {

inline int GpuCount() { return DeviceRegistry::Global().DeviceCount(DeviceType::GPU()); }

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (GpuCount() == 0) GTEST_SKIP() << "no GPU";
    absl::StatusOr<Device*> d = DeviceRegistry::Global().GetDevice(GPUPlace(0));
    ASSERT_OK(d.status());
    device_ = CudaDeviceOf(*d);
  }

  CudaDevice* device_ = nullptr;
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_GPU_TEST_H_
