// Temporary device tensors for a kernel's intermediate results (partial
// sums, im2col buffers, validation flags).
//
//   ASSIGN_OR_RETURN(Tensor partials,
//                    AllocateScratch(ctx, DataType::kFloat64, Shape({parts}), "partial sums"));
//
// The tensor comes from the context's GPU allocator and is released with
// its last copy, usually when Compute returns while the work that uses it
// is still queued: later users of the memory are ordered after the compute
// stream (caching_allocator.h). Synchronous and thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_SCRATCH_H_
#define TANDEM_BACKENDS_CUDA_SCRATCH_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/kernel/kernel_context.h"
#include "framework/tensor/tensor.h"

namespace tandem {
namespace cuda {

// A dtype[shape] tensor in the context's GPU memory, uninitialised. An
// allocation failure keeps its code (ResourceExhausted over the memory
// limit) and is prefixed with the op and the purpose:
// "op 'mean': temporary float64[3] for partial sums: out of memory on ...".
absl::StatusOr<Tensor> AllocateScratch(const KernelContext* ctx, DataType dtype, const Shape& shape,
                                       absl::string_view purpose);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_SCRATCH_H_
