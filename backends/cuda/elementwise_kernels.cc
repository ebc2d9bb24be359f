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

namespace tandem {
namespace cuda {
namespace {

class FillConstantKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                     GetAttr<std::vector<int64_t>>(op.attrs, "shape", op.type));
    absl::StatusOr<Shape> shape = Shape::Make(dims);
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op.type, "': attribute 'shape': ", shape.status().message()));
    }
    shape_ = *shape;
    ASSIGN_OR_RETURN(value_, GetAttr<double>(op.attrs, "value", op.type));
    ASSIGN_OR_RETURN(dtype_, GetAttr<DataType>(op.attrs, "dtype", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", dtype_, shape_));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchDataType(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      T value;
      if constexpr (std::is_same_v<T, bool>) {
        value = value_ != 0;
      } else {
        value = static_cast<T>(value_);
      }
      CUDA_RETURN_IF_ERROR(LaunchFill<T>(out->data<T>(), out->NumElements(), value, stream));
      return absl::OkStatus();
    });
  }

 private:
  Shape shape_;
  double value_ = 0;
  DataType dtype_ = DataType::kFloat32;
};

REGISTER_KERNEL(KernelDef("fill_constant", "gpu").TypeConstraint("dtype", AllDataTypes()),
                FillConstantKernel);

class ScaleKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(scale_, GetAttr<double>(op.attrs, "scale", op.type));
    ASSIGN_OR_RETURN(bias_, GetAttr<double>(op.attrs, "bias", op.type));
    ASSIGN_OR_RETURN(bias_after_scale_, GetAttr<bool>(op.attrs, "bias_after_scale", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchNumeric(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchScale<T>(x->data<T>(), out->data<T>(), x->NumElements(), scale_,
                                          bias_, bias_after_scale_, stream));
      return absl::OkStatus();
    });
  }

 private:
  double scale_ = 1;
  double bias_ = 0;
  bool bias_after_scale_ = true;
};

REGISTER_KERNEL(KernelDef("scale", "gpu").TypeConstraint("X", kNumericTypes), ScaleKernel);

class CastKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(out_dtype_, GetAttr<DataType>(op.attrs, "out_dtype", op.type));
    return absl::OkStatus();
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
