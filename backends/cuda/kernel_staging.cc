#include "backends/cuda/kernel_staging.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {
namespace cuda {

KernelStaging::~KernelStaging() { Release(); }

void KernelStaging::Release() {
  if (uploaded_ != nullptr) {
    const absl::Status s = CudaStatus(cudaEventSynchronize(uploaded_->get()),
                                      "cudaEventSynchronize", __FILE__, __LINE__);
    LOG_IF(ERROR, !s.ok()) << s;
    uploaded_.reset();
  }
  if (host_ != nullptr) device_->host_allocator()->Deallocate(host_, capacity_ * sizeof(int64_t));
  host_ = nullptr;
  capacity_ = 0;
  device_ = nullptr;
}

absl::StatusOr<int64_t*> KernelStaging::HostWords(KernelContext* ctx, int64_t words) {
  // A graph would replay the upload from this buffer, which the next
  // Compute refills (and whose event it could not wait for).
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(CudaStreamOf(ctx->stream()), &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    return absl::FailedPreconditionError(
        "it uploads host data from kernel-owned staging (kernel_staging.h), which cannot be "
        "captured into a graph");
  }
  CudaDevice* device = CudaDeviceOf(ctx->device());
  if (device != device_ || words > capacity_) {
    Release();
    ASSIGN_OR_RETURN(void* host, device->host_allocator()->Allocate(words * sizeof(int64_t)));
    host_ = static_cast<int64_t*>(host);
    capacity_ = words;
    device_ = device;
  } else if (uploaded_ != nullptr) {
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(uploaded_->get()));
  }
  return host_;
}

absl::StatusOr<Tensor> KernelStaging::Upload(KernelContext* ctx, int64_t words,
                                             absl::string_view purpose) {
  CHECK(device_ == CudaDeviceOf(ctx->device()) && words <= capacity_)
      << "KernelStaging::Upload without HostWords for as many words on this device";
  ASSIGN_OR_RETURN(Tensor device_words,
                   AllocateScratch(ctx, DataType::kInt64, Shape({words}), purpose));
  if (words == 0) return device_words;
  if (uploaded_ == nullptr) {
    ASSIGN_OR_RETURN(uploaded_, CudaEvent::Create(ctx->place().index()));
  }
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(device_words.raw_data(), host_, words * sizeof(int64_t),
                                       cudaMemcpyHostToDevice, stream));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(uploaded_->get(), stream));
  return device_words;
}

}  // namespace cuda
}  // namespace tandem
