// The CUDA backend's registration, GPU or not: the gpu device factory is
// linked and counts devices without crashing, and without a GPU every gpu
// call is a status. (That every gpu kernel declares what the cpu kernel of
// its op declares is checked for every place by
// tests/conformance/conformance_test.cc.)
#include <cuda_runtime_api.h>

#include <vector>

#include "backends/cuda/gpu_test.h"
#include "framework/kernel/eager.h"

namespace tandem {
namespace cuda {
namespace {

TEST(CudaBackend, GpuFactoryIsLinkedAndCountsWithoutCrashing) {
  ASSERT_NE(DeviceRegistry::Global().FactoryFor(DeviceType::GPU()), nullptr);
  EXPECT_EQ(GPUPlace(0).LogName(), "CUDAPlace(0)");
  int n = 0;
  const cudaError_t error = cudaGetDeviceCount(&n);
  cudaGetLastError();
  EXPECT_EQ(GpuCount(), error == cudaSuccess ? n : 0);
}

TEST(CudaBackend, WithoutGpuEverythingIsAStatus) {
  if (GpuCount() > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_THAT(DeviceRegistry::Global().GetDevice(GPUPlace(0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0 gpu device(s)")));
  OpDesc op;
  op.type = "fill_constant";
  op.attrs["shape"] = std::vector<int64_t>{2};
  EXPECT_THAT(RunOpEager(op, GPUPlace(0), {}), StatusIs(absl::StatusCode::kInvalidArgument));
  { DeviceGuard guard(GPUPlace(0)); }  // a no-op, not a crash
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
