#include "backends/cuda/cuda_status.h"

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace cuda {
namespace {

using ::testing::AllOf;

absl::Status FailingCall() {
  CUDA_RETURN_IF_ERROR(cudaErrorInvalidValue);
  return absl::OkStatus();
}

absl::Status FailingCublas() {
  CUBLAS_RETURN_IF_ERROR(CUBLAS_STATUS_INVALID_VALUE);
  return absl::OkStatus();
}

TEST(CudaStatus, OutOfMemoryIsResourceExhaustedWithLocationAndExpression) {
  EXPECT_THAT(CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "x.cc", 12),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "x.cc:12: cudaMalloc(&p, n) failed: cudaErrorMemoryAllocation "
                       "(out of memory)"));
}

TEST(CudaStatus, MissingDeviceOrDriverIsUnavailable) {
  EXPECT_THAT(CudaStatus(cudaErrorNoDevice, "f()", "x.cc", 1),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cudaErrorNoDevice")));
  EXPECT_THAT(CudaStatus(cudaErrorInsufficientDriver, "f()", "x.cc", 1),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST(CudaStatus, OthersAreInternalAndSuccessIsOk) {
  EXPECT_OK(CudaStatus(cudaSuccess, "f()", "x.cc", 1));
  EXPECT_THAT(FailingCall(),
              StatusIs(absl::StatusCode::kInternal, AllOf(HasSubstr("cuda_status_test.cc:"),
                                                          HasSubstr("cudaErrorInvalidValue failed"),
                                                          HasSubstr("invalid argument"))));
}

TEST(CublasStatus, ConvertsCodes) {
  EXPECT_OK(CublasStatus(CUBLAS_STATUS_SUCCESS, "f()", "x.cc", 1));
  EXPECT_THAT(CublasStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate(&h)", "x.cc", 3),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("x.cc:3: cublasCreate(&h) failed"),
                             HasSubstr("CUBLAS_STATUS_ALLOC_FAILED"))));
  EXPECT_THAT(CublasStatus(CUBLAS_STATUS_NOT_INITIALIZED, "f()", "x.cc", 1),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(FailingCublas(),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("CUBLAS_STATUS_INVALID_VALUE")));
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
