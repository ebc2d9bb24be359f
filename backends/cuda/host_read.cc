#include "backends/cuda/host_read.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace cuda {

absl::Status ReadToHost(KernelContext* ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  CachingAllocator* pinned = CudaDeviceOf(ctx->device())->host_allocator();
  ASSIGN_OR_RETURN(void* staging, pinned->Allocate(bytes));
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  cudaError_t error = cudaMemcpyAsync(staging, src, bytes, cudaMemcpyDeviceToHost, stream);
  if (error == cudaSuccess) error = cudaStreamSynchronize(stream);
  if (error == cudaSuccess) std::memcpy(dst, staging, bytes);
  // The copy has finished (or failed to start): the block is free again.
  pinned->Deallocate(staging, bytes);
  CUDA_RETURN_IF_ERROR(error);
  return absl::OkStatus();
}

}  // namespace cuda
}  // namespace tandem
