// The kernels of the random ops (ops/random) for every backend whose memory
// the host can address: uniform_random, gaussian_random. Written once, templated on an
// execution policy (serial_policy.h). A backend registers them under its
// device type with one line:
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h  //
//   host_kernels.h
//
// Each kernel class's static Contract is its registration line and RegisterRandomKernels lists
// them:
//   uniform_random    attr dtype: float32, float64
//   gaussian_random   attr dtype: float32, float64
// Values come from the counter-based generators (counter_random.h): element
// i depends only on (seed, i), so every backend and thread count produces
// the same bits. Compute is synchronous and thread-safe across kernel
// instances.
#ifndef TANDEM_BACKENDS_COMMON_RANDOM_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_RANDOM_KERNELS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "backends/common/counter_random.h"
#include "backends/common/elementwise.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_schema.h"
#include "ops/random/shape_fns.h"

namespace tandem {

// Out (attrs shape, dtype) at flat index i = static_cast<T>(min + (max -
// min) * CounterUniform(seed, i)), attrs min, max and seed (an int64 taken
// as its uint64 bits).
template <typename Policy>
class UniformRandomKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("uniform_random", device_type).TypeConstraint("dtype", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(attrs_, UniformRandomAttrs::Read(op));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    const TensorMeta& meta = attrs_.out;
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", meta.dtype, meta.shape));
    const uint64_t seed = static_cast<uint64_t>(attrs_.seed);
    return DispatchType(Types(), meta.dtype, *ctx, "dtype", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out->data<T>();
      Policy::ParallelFor(out->NumElements(), kMinElementsPerTask, [&](int64_t begin, int64_t end) {
        FillUniform(attrs_.min, attrs_.max, seed, begin, end - begin, o + begin);
      });
      return absl::OkStatus();
    });
  }

 private:
  UniformRandomAttrs attrs_;
};

// Out (attrs shape, dtype) at flat index i = static_cast<T>(mean + std *
// z(seed, i)), z from FillGaussian (Box-Muller on two counter draws).
template <typename Policy>
class GaussianRandomKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("gaussian_random", device_type).TypeConstraint("dtype", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(attrs_, GaussianRandomAttrs::Read(op));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    const TensorMeta& meta = attrs_.out;
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", meta.dtype, meta.shape));
    const uint64_t seed = static_cast<uint64_t>(attrs_.seed);
    return DispatchType(Types(), meta.dtype, *ctx, "dtype", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out->data<T>();
      Policy::ParallelFor(out->NumElements(), kMinElementsPerTask, [&](int64_t begin, int64_t end) {
        FillGaussian(attrs_.mean, attrs_.std, seed, begin, end - begin, o + begin);
      });
      return absl::OkStatus();
    });
  }

 private:
  GaussianRandomAttrs attrs_;
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterRandomKernels(const std::string& device_type) {
  RegisterByContract<UniformRandomKernel<Policy>, GaussianRandomKernel<Policy>>(device_type);
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_RANDOM_KERNELS_H_
