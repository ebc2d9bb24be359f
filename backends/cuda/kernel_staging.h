// KernelStaging: host data that a gpu kernel itself needs on the device
// (ids that it reads in host memory, a sparse gradient's row ids), sent
// with one asynchronous copy from pinned memory that the kernel object
// owns: kernel-argument marshalling, like TensorFlow's
// CudaDeviceArrayOnHost. It is not a transfer between places: no copy op,
// and the placer and copy statistics do not see it.
//
//   class MyKernel : public OpKernel {
//     absl::Status Compute(KernelContext* ctx) override {
//       ASSIGN_OR_RETURN(int64_t* host, staging_.HostWords(ctx, n));
//       ... fill host[0 .. n) ...
//       ASSIGN_OR_RETURN(Tensor words, staging_.Upload(ctx, n, "ids"));
//       // launch kernels that read words.data<int64_t>() on ctx's stream
//     }
//     KernelStaging staging_;
//   };
//
// HostWords waits until the device has read the previous upload (an event,
// normally long passed: a run ends with a synchronisation), then hands out
// the pinned buffer, grown as needed; FailedPrecondition while the
// context's stream is captured into a graph (the step then runs eagerly).
// Upload allocates device scratch (scratch.h), enqueues the copy on the
// context's stream and returns at once. The destructor waits for the last upload. Not thread-safe:
// one per kernel object, like the kernel's Compute calls.
#ifndef TANDEM_BACKENDS_CUDA_KERNEL_STAGING_H_
#define TANDEM_BACKENDS_CUDA_KERNEL_STAGING_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/cuda_device.h"
#include "framework/kernel/kernel_context.h"
#include "framework/tensor/tensor.h"

namespace tandem {
namespace cuda {

class KernelStaging {
 public:
  KernelStaging() = default;
  ~KernelStaging();
  KernelStaging(const KernelStaging&) = delete;
  KernelStaging& operator=(const KernelStaging&) = delete;

  // Pinned host memory for `words` 8-byte words, for the caller to fill
  // before Upload; valid until the next call.
  absl::StatusOr<int64_t*> HostWords(KernelContext* ctx, int64_t words);

  // The first `words` words of the host buffer in a new int64[words] device
  // tensor of the context's GPU, copied asynchronously on its stream.
  // `purpose` names the data in an allocation error.
  absl::StatusOr<Tensor> Upload(KernelContext* ctx, int64_t words, absl::string_view purpose);

 private:
  void Release();  // waits for the last upload, frees the buffer

  CudaDevice* device_ = nullptr;  // whose pinned memory host_ is
  int64_t* host_ = nullptr;
  int64_t capacity_ = 0;                 // words
  std::unique_ptr<CudaEvent> uploaded_;  // recorded after each upload
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_KERNEL_STAGING_H_
