// dropout's random stream, shared by the host kernel (nn_layer_kernels.h)
// and the CUDA one (backends/cuda/layer_kernels.cc), so every place draws
// the same mask:
//
//   absl::Status Init(const OpDesc& op) override { return dropout_.Read(op); }
//   absl::Status Compute(KernelContext* ctx) override {
//     const uint64_t key = dropout_.NextKey();  // element i keeps if CounterUniform(key, i) >= p
//     ...
//   }
#ifndef TANDEM_BACKENDS_COMMON_DROPOUT_STREAM_H_
#define TANDEM_BACKENDS_COMMON_DROPOUT_STREAM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "framework/op/op_desc.h"
#include "ops/nn/prologues.h"

namespace tandem {

// dropout's attrs, its seed and its run count: run k (counting training
// runs only) draws from the counter stream CounterStreamSeed(seed, k).
// One per kernel object; not thread-safe (Compute is never concurrent for
// one kernel).
class DropoutForward {
 public:
  absl::Status Read(const OpDesc& op);
  const prologue::DropoutAttrs& attrs() const { return attrs_; }
  // The generator key of this run; advances the count unless is_test.
  uint64_t NextKey();

 private:
  prologue::DropoutAttrs attrs_;
  uint64_t seed_ = 0;
  uint64_t step_ = 0;
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_DROPOUT_STREAM_H_
