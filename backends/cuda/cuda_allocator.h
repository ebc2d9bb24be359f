// The CUDA backend's allocators: caching device memory (cudaMalloc) and
// caching pinned host memory (cudaHostAlloc), one of each per GPU.
//
//   std::unique_ptr<CachingAllocator> dev = NewCudaDeviceAllocator(0, limit);
//   ASSIGN_OR_RETURN(void* d, dev->Allocate(n));      // device memory of gpu:0
//   std::unique_ptr<CachingAllocator> host = NewCudaPinnedAllocator(0);
//   ASSIGN_OR_RETURN(void* h, host->Allocate(n));     // page-locked host memory
//
// The device owns them (see CudaDevice). Caching, limits, statistics,
// thread-safety and the stream contract are CachingAllocator's; raw
// allocations run under a CudaDeviceGuard for the owning GPU. Device memory
// that the driver refuses is ResourceExhausted; pinned memory is portable (usable by
// every GPU) and reports place() == CPUPlace().
#ifndef TANDEM_BACKENDS_CUDA_CUDA_ALLOCATOR_H_
#define TANDEM_BACKENDS_CUDA_CUDA_ALLOCATOR_H_

#include <cstdint>
#include <memory>

#include "backends/cuda/caching_allocator.h"

namespace tandem {
namespace cuda {

// Device memory of GPU `device`; `bytes_limit` 0 means no limit.
std::unique_ptr<CachingAllocator> NewCudaDeviceAllocator(int device, int64_t bytes_limit);
// Pinned host memory registered while GPU `device` is current.
std::unique_ptr<CachingAllocator> NewCudaPinnedAllocator(int device);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_CUDA_ALLOCATOR_H_
