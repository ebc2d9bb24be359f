#include "backends/cuda/cuda_allocator.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device_guard.h"
#include "backends/cuda/cuda_status.h"
#include "glog/logging.h"

namespace tandem {
namespace cuda {
namespace {

class DeviceMemory final : public RawMemory {
 public:
  explicit DeviceMemory(int device) : device_(device) {}

  absl::StatusOr<void*> Alloc(size_t bytes) override {
    CudaDeviceGuard guard(device_);
    void* ptr = nullptr;
    CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, bytes));
    return ptr;
  }

  void Free(void* ptr, size_t bytes) override {
    CudaDeviceGuard guard(device_);
    const absl::Status s = CudaStatus(cudaFree(ptr), "cudaFree(ptr)", __FILE__, __LINE__);
    LOG_IF(ERROR, !s.ok()) << "gpu:" << device_ << ": freeing " << bytes << " bytes: " << s;
  }

 private:
  const int device_;
};

class PinnedMemory final : public RawMemory {
 public:
  explicit PinnedMemory(int device) : device_(device) {}

  absl::StatusOr<void*> Alloc(size_t bytes) override {
    CudaDeviceGuard guard(device_);
    void* ptr = nullptr;
    CUDA_RETURN_IF_ERROR(cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable));
    return ptr;
  }

  void Free(void* ptr, size_t bytes) override {
    CudaDeviceGuard guard(device_);
    const absl::Status s = CudaStatus(cudaFreeHost(ptr), "cudaFreeHost(ptr)", __FILE__, __LINE__);
    LOG_IF(ERROR, !s.ok()) << "pinned memory of gpu:" << device_ << ": freeing " << bytes
                           << " bytes: " << s;
  }

 private:
  const int device_;
};

}  // namespace

std::unique_ptr<CachingAllocator> NewCudaDeviceAllocator(int device, int64_t bytes_limit) {
  return std::make_unique<CachingAllocator>(absl::StrCat("gpu:", device), GPUPlace(device),
                                            std::make_unique<DeviceMemory>(device), bytes_limit);
}

std::unique_ptr<CachingAllocator> NewCudaPinnedAllocator(int device) {
  return std::make_unique<CachingAllocator>(absl::StrCat("pinned(gpu:", device, ")"), CPUPlace(),
                                            std::make_unique<PinnedMemory>(device),
                                            /*bytes_limit=*/0);
}

}  // namespace cuda
}  // namespace tandem
