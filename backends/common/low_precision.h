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
// GPU's tensor cores do. The scratch copies come from the calling thread's
// FloatScratch pool (float_scratch.h: reused blocks, no page faults after
// the first step) and cost a widening and a rounding pass each. Not
// thread-safe (one kernel's Compute); the tensors must outlive the object.
#ifndef TANDEM_BACKENDS_COMMON_LOW_PRECISION_H_
#define TANDEM_BACKENDS_COMMON_LOW_PRECISION_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "backends/common/elementwise.h"
#include "backends/common/float_scratch.h"
#include "framework/tensor/tensor.h"
#include "framework/types/float16.h"

namespace tandem {

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
      const FloatScratch& wide = scratch_.emplace_back(t->NumElements());
      Cast<float, T, Policy>(t->data<T>(), wide.data(), t->NumElements());
      return wide.data();
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
      outputs_.emplace_back(t, FloatScratch(t->NumElements()));
      return outputs_.back().second.data();
    }
  }

  // Rounds every output written through Out into its tensor.
  void Finish() {
    if constexpr (kIsLowPrecisionFloat<T>) {
      for (auto& [tensor, values] : outputs_) {
        Cast<T, float, Policy>(values.data(), tensor->template data<T>(), tensor->NumElements());
      }
      outputs_.clear();
    }
  }

 private:
  std::vector<FloatScratch> scratch_;
  std::vector<std::pair<Tensor*, FloatScratch>> outputs_;
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_LOW_PRECISION_H_
