// Host kernels of the 16-bit floating types (bfloat16, float16) compute in
// float32: ComputeBuffers hands a kernel float32 views of its tensors,
// widening 16-bit inputs into scratch copies and rounding scratch outputs
// back when the kernel finishes; for float32 / float64 tensors the views are
// the tensors' own memory and nothing is copied.
//
//   return DispatchType(FloatTypesWith16Bit(), x->dtype(), *ctx, "X", [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     ComputeBuffers<T, Policy> buffers;
//     RETURN_IF_ERROR((FlatMatmul<ComputeTypeOf<T>, Policy>(
//         buffers.In(x), buffers.In(y), nullptr, m, k, n, buffers.Out(out))));
//     buffers.Finish();   // rounds each 16-bit output once, to nearest even
//     return absl::OkStatus();
//   });
//
// So a 16-bit product accumulates in float32 and is rounded once, as the
// GPU's tensor cores do. The scratch copies come from
// ComputeScratchAllocator (a CpuAllocator of their own: blocks of 1 MiB and
// more are kept and handed out again for the same size, so a step's scratch
// costs no page faults after the first step) and cost a widening and a
// rounding pass each. Not thread-safe (one kernel's Compute); the tensors
// must outlive the object.
#ifndef TANDEM_BACKENDS_COMMON_LOW_PRECISION_H_
#define TANDEM_BACKENDS_COMMON_LOW_PRECISION_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backends/common/elementwise.h"
#include "framework/memory/allocator.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/tensor/tensor.h"
#include "framework/types/float16.h"
#include "glog/logging.h"

namespace tandem {

// The host memory of ComputeBuffers' float32 copies: process-wide, never
// freed, without a limit, apart from the tensors' allocator (its blocks are
// not counted in their stats). Thread-safe.
inline CpuAllocator* ComputeScratchAllocator() {
  static CpuAllocator* const allocator = new CpuAllocator();
  return allocator;
}

template <typename T, typename Policy>
class ComputeBuffers {
 public:
  using Compute = ComputeTypeOf<T>;

  ComputeBuffers() = default;
  ComputeBuffers(const ComputeBuffers&) = delete;
  ComputeBuffers& operator=(const ComputeBuffers&) = delete;

  // The values of `t` (of type T) as Compute; nullptr for a null `t`.
  const Compute* In(const Tensor* t) {
    if (t == nullptr) return nullptr;
    if constexpr (!kIsLowPrecisionFloat<T>) {
      return t->data<T>();
    } else {
      float* wide = Scratch(t->NumElements());
      Cast<float, T, Policy>(t->data<T>(), wide, t->NumElements());
      return wide;
    }
  }

  // Where a kernel writes the values of `t` (of type T) as Compute; they
  // reach `t` at Finish. nullptr for a null `t`. Uninitialised, as `t`'s own
  // memory is for float32: the kernel writes every element.
  Compute* Out(Tensor* t) {
    if (t == nullptr) return nullptr;
    if constexpr (!kIsLowPrecisionFloat<T>) {
      return t->data<T>();
    } else {
      outputs_.emplace_back(t, Scratch(t->NumElements()));
      return outputs_.back().second;
    }
  }

  // Rounds every output written through Out into its tensor.
  void Finish() {
    if constexpr (kIsLowPrecisionFloat<T>) {
      for (auto& [tensor, values] : outputs_) {
        Cast<T, float, Policy>(values, tensor->template data<T>(), tensor->NumElements());
      }
      outputs_.clear();
    }
  }

 private:
  // n uninitialised floats, held until the object goes (an allocation that
  // fails aborts, as the std::vector it replaced did).
  float* Scratch(int64_t n) {
    absl::StatusOr<std::shared_ptr<Buffer>> buffer =
        Buffer::Allocate(ComputeScratchAllocator(), static_cast<size_t>(n) * sizeof(float));
    CHECK(buffer.ok()) << "float32 scratch of a 16-bit host kernel: " << buffer.status();
    scratch_.push_back(*std::move(buffer));
    return static_cast<float*>(scratch_.back()->data());
  }

  std::vector<std::shared_ptr<Buffer>> scratch_;
  std::vector<std::pair<Tensor*, float*>> outputs_;
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_LOW_PRECISION_H_
