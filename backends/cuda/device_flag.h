// FirstBadPosition: a device word in which kernels record the first
// position of a bad input element (a zero divisor, an out-of-range label)
// with atomicMin, read back by the OpKernel to return InvalidArgument. No
// trap: the GPU stays usable after bad input.
//
//   ASSIGN_OR_RETURN(FirstBadPosition flag, FirstBadPosition::Create(ctx));
//   CUDA_RETURN_IF_ERROR(LaunchFindZero<int32_t>(y, n, flag.get(), stream));
//   ASSIGN_OR_RETURN(std::optional<int64_t> zero, flag.Read(ctx));
//   if (zero) return ctx->InvalidArgument(...);
//
// Create enqueues the reset on the context's stream; Read waits for that
// stream (one synchronisation, host_read.h). One object per Compute call;
// not thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_DEVICE_FLAG_H_
#define TANDEM_BACKENDS_CUDA_DEVICE_FLAG_H_

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "framework/kernel/kernel_context.h"
#include "framework/tensor/tensor.h"

namespace tandem {
namespace cuda {

class FirstBadPosition {
 public:
  // Allocates the word (scratch.h) and enqueues its reset to "none".
  static absl::StatusOr<FirstBadPosition> Create(KernelContext* ctx);

  // For kernels: atomicMin(get(), position) records a bad position.
  unsigned long long* get() const {  // NOLINT(runtime/int): atomicMin's type
    return static_cast<unsigned long long*>(word_.raw_data());  // NOLINT(runtime/int)
  }

  // Waits for the context's stream; the first bad position, or nullopt.
  absl::StatusOr<std::optional<int64_t>> Read(KernelContext* ctx) const;

 private:
  explicit FirstBadPosition(Tensor word) : word_(std::move(word)) {}
  Tensor word_;
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_DEVICE_FLAG_H_
