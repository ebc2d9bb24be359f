// Converts CUDA runtime and cuBLAS error codes to absl::Status at the edge of
// the CUDA backend.
//
//   absl::Status Fill(float* p, size_t n, cudaStream_t s) {
//     CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0, n * sizeof(float), s));
//     CUBLAS_RETURN_IF_ERROR(cublasSetStream(handle, s));
//     return absl::OkStatus();
//   }
//
// A failure becomes a status whose message holds file:line, the failing
// expression and CUDA's name and description of the error, e.g.
//   "backends/cuda/x.cc:12: cudaMalloc(&p, n) failed: cudaErrorMemoryAllocation
//    (out of memory)".
// Codes: out of memory -> ResourceExhausted; no device / no driver ->
// Unavailable; anything else -> Internal.
// Stateless and thread-safe, except that converting a CUDA runtime error also
// clears the calling thread's last-error state (cudaGetLastError), so a later
// launch check does not report the same error again.
#ifndef TANDEM_BACKENDS_CUDA_CUDA_STATUS_H_
#define TANDEM_BACKENDS_CUDA_CUDA_STATUS_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "absl/base/optimization.h"
#include "absl/status/status.h"

namespace tandem {
namespace cuda {

// OK for cudaSuccess; otherwise the status described above.
absl::Status CudaStatus(cudaError_t error, const char* expr, const char* file, int line);
// OK for CUBLAS_STATUS_SUCCESS; CUBLAS_STATUS_ALLOC_FAILED is
// ResourceExhausted, CUBLAS_STATUS_NOT_INITIALIZED Unavailable, others
// Internal.
absl::Status CublasStatus(cublasStatus_t status, const char* expr, const char* file, int line);

}  // namespace cuda
}  // namespace tandem

// Returns the converted status from the enclosing function if the
// expression (a cudaError_t; variadic so that template commas need no
// parentheses) is not cudaSuccess.
#define CUDA_RETURN_IF_ERROR(...)                                                              \
  do {                                                                                         \
    const cudaError_t tandem_cuda_error_ = (__VA_ARGS__);                                      \
    if (ABSL_PREDICT_FALSE(tandem_cuda_error_ != cudaSuccess)) {                               \
      return ::tandem::cuda::CudaStatus(tandem_cuda_error_, #__VA_ARGS__, __FILE__, __LINE__); \
    }                                                                                          \
  } while (0)

// Same for a cublasStatus_t.
#define CUBLAS_RETURN_IF_ERROR(...)                                                      \
  do {                                                                                   \
    const cublasStatus_t tandem_cublas_status_ = (__VA_ARGS__);                          \
    if (ABSL_PREDICT_FALSE(tandem_cublas_status_ != CUBLAS_STATUS_SUCCESS)) {            \
      return ::tandem::cuda::CublasStatus(tandem_cublas_status_, #__VA_ARGS__, __FILE__, \
                                          __LINE__);                                     \
    }                                                                                    \
  } while (0)

#endif  // TANDEM_BACKENDS_CUDA_CUDA_STATUS_H_
