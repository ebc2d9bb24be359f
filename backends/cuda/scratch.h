// Temporary device tensors for a kernel's intermediate results (partial
// sums, im2col buffers, validation flags), and float32 working copies of
// 16-bit tensors for kernels that compute those in float32.
//
//   ASSIGN_OR_RETURN(Tensor partials,
//                    AllocateScratch(ctx, DataType::kFloat64, Shape({parts}), "partial sums"));
//   ASSIGN_OR_RETURN(Tensor wide_x, WidenedCopy(ctx, *x));     // bfloat16 -> float32
//   ... the float32 kernel writes wide_out ...
//   RETURN_IF_ERROR(NarrowInto(ctx, wide_out, out));          // rounded once
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

// A float32 scratch copy of bfloat16 or float16 `t` (exact), enqueued on the
// context's stream. Internal for another dtype.
absl::StatusOr<Tensor> WidenedCopy(const KernelContext* ctx, const Tensor& t);

// Enqueues `out` (bfloat16 or float16) = float32 `wide` rounded to nearest
// even, on the context's stream; the shapes' element counts must match.
absl::Status NarrowInto(const KernelContext* ctx, const Tensor& wide, Tensor* out);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_SCRATCH_H_
