// gpu kernels of fill_constant, scale and cast (element-wise, no broadcast).
#include <cuda_runtime_api.h>

#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/kernel_util.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/prologues.h"

namespace tandem {
namespace cuda {
namespace {

class FillConstantKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", attrs_.dtype, attrs_.shape));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchDataType(attrs_.dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      T value;
      if constexpr (std::is_same_v<T, bool>) {
        value = attrs_.value != 0;
      } else {
        value = static_cast<T>(attrs_.value);
      }
      CUDA_RETURN_IF_ERROR(LaunchFill<T>(out->data<T>(), out->NumElements(), value, stream));
      return absl::OkStatus();
    });
  }

 private:
  prologue::FillConstantAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("fill_constant", "gpu").TypeConstraint("dtype", AllDataTypes()),
                FillConstantKernel);

class ScaleKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchNumeric(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchScale<T>(x->data<T>(), out->data<T>(), x->NumElements(),
                                          attrs_.scale, attrs_.bias, attrs_.bias_after_scale,
                                          stream));
      return absl::OkStatus();
    });
  }

 private:
  prologue::ScaleAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("scale", "gpu").TypeConstraint("X", kNumericTypes), ScaleKernel);

class CastKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "out_dtype", &out_dtype_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", out_dtype_, x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    if (x->dtype() == out_dtype_) {
      if (x->NumBytes() > 0) {
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out->raw_data(), x->raw_data(), x->NumBytes(),
                                             cudaMemcpyDeviceToDevice, stream));
      }
      return absl::OkStatus();
    }
    return DispatchDataType(x->dtype(), [&](auto from_tag) -> absl::Status {
      using From = typename decltype(from_tag)::type;
      return DispatchDataType(out_dtype_, [&](auto to_tag) -> absl::Status {
        using To = typename decltype(to_tag)::type;
        CUDA_RETURN_IF_ERROR(
            LaunchCast<From, To>(x->data<From>(), out->data<To>(), x->NumElements(), stream));
        return absl::OkStatus();
      });
    });
  }

 private:
  DataType out_dtype_ = DataType::kFloat32;
};

REGISTER_KERNEL(KernelDef("cast", "gpu")
                    .TypeConstraint("X", AllDataTypes())
                    .TypeConstraint("out_dtype", AllDataTypes()),
                CastKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
