// Synchronous reads of small device data that a kernel itself needs on the
// host: a validation flag (device_flag.h: a zero divisor, a bad label) and
// the offending element. They are part of the kernel, not transfers between
// places: no copy op is involved, the placer and copy statistics do not see
// them, and the data never becomes a tensor on another place. (Checks that
// need not stop the host use deferred_checks.h instead.)
//
//   unsigned long long bad;
//   RETURN_IF_ERROR(ReadToHost(ctx, &bad, flag, sizeof(bad)));
//
// Enqueues a device-to-host copy into pinned memory on the kernel's stream
// (so it is ordered after the work already enqueued there), waits for that
// stream, then copies into `dst`. Costs one stream synchronisation per call.
#ifndef TANDEM_BACKENDS_CUDA_HOST_READ_H_
#define TANDEM_BACKENDS_CUDA_HOST_READ_H_

#include <cstddef>

#include "absl/status/status.h"
#include "framework/kernel/kernel_context.h"

namespace tandem {
namespace cuda {

// Copies `bytes` from device memory `src` (of the context's GPU) to host
// memory `dst` as described above. The context's device must be a gpu one.
absl::Status ReadToHost(KernelContext* ctx, void* dst, const void* src, size_t bytes);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_HOST_READ_H_
