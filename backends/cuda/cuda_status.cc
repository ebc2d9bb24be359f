#include "backends/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace tandem {
namespace cuda {
namespace {

absl::StatusCode CodeFor(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::StatusCode::kResourceExhausted;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::StatusCode CodeFor(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      return absl::StatusCode::kResourceExhausted;
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status CudaStatus(cudaError_t error, const char* expr, const char* file, int line) {
  if (error == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();  // Clears the non-sticky error state of this thread.
  return absl::Status(CodeFor(error), absl::StrCat(file, ":", line, ": ", expr,
                                                   " failed: ", cudaGetErrorName(error), " (",
                                                   cudaGetErrorString(error), ")"));
}

absl::Status CublasStatus(cublasStatus_t status, const char* expr, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::Status(CodeFor(status), absl::StrCat(file, ":", line, ": ", expr,
                                                    " failed: ", cublasGetStatusName(status), " (",
                                                    cublasGetStatusString(status), ")"));
}

}  // namespace cuda
}  // namespace tandem
