// gpu kernels of shape, slice(_grad) and crop_tensor(_grad).
//
// shape writes its int32 output in host memory (HostMemory("Out")) from the
// input's dims alone: no device work at all. crop_tensor reads its Shape
// argument on the host (HostMemory("Shape")). slice, crop_tensor and their
// gradients copy a box-shaped region (ops/array/shape_fns.h) with the
// strided gather/scatter kernels of region_launchers.h; the gradients zero
// the input's gradient first, unless the region is all of it.
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/region_launchers.h"
#include "backends/cuda/region_plan.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/array/shape_fns.h"
#include "ops/math/prologues.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

class ShapeKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* input, ctx->InputTensor("Input"));
    ASSIGN_OR_RETURN(std::vector<int32_t> dims, ShapeValues(ctx->op().type, input->shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", DataType::kInt32,
                                                       Shape({static_cast<int64_t>(dims.size())})));
    if (!dims.empty()) std::memcpy(out->raw_data(), dims.data(), dims.size() * sizeof(int32_t));
    return absl::OkStatus();
  }
};

REGISTER_KERNEL(KernelDef("shape", "gpu").TypeConstraint("Input", AllDataTypes()).HostMemory("Out"),
                ShapeKernel);

// out = the region `box` of `full`.
absl::Status Gather(KernelContext* ctx, const Tensor& full, const Box& box, Tensor* out) {
  ASSIGN_OR_RETURN(RegionGeometry g, PlanRegion(ctx->op().type, full.shape(), box));
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  return DispatchNumeric(full.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    CUDA_RETURN_IF_ERROR(LaunchGatherRegion<T>(full.data<T>(), out->data<T>(), g, stream));
    return absl::OkStatus();
  });
}

// dfull = zeros with the region `box` = dregion.
absl::Status ScatterIntoZeros(KernelContext* ctx, const Tensor& dregion, const Box& box,
                              Tensor* dfull) {
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  if (box.shape == dfull->shape()) {  // the whole tensor: a plain copy
    if (dfull->NumBytes() > 0) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dfull->raw_data(), dregion.raw_data(), dfull->NumBytes(),
                                           cudaMemcpyDeviceToDevice, stream));
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(RegionGeometry g, PlanRegion(ctx->op().type, dfull->shape(), box));
  if (dfull->NumBytes() > 0) {
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dfull->raw_data(), 0, dfull->NumBytes(), stream));
  }
  return DispatchNumeric(dfull->dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    CUDA_RETURN_IF_ERROR(LaunchScatterRegion<T>(dregion.data<T>(), dfull->data<T>(), g, stream));
    return absl::OkStatus();
  });
}

struct SliceAttrs {
  std::vector<int64_t> axes, starts, ends;

  absl::Status Read(const OpDesc& op) {
    ASSIGN_OR_RETURN(axes, GetAttr<std::vector<int64_t>>(op.attrs, "axes", op.type));
    ASSIGN_OR_RETURN(starts, GetAttr<std::vector<int64_t>>(op.attrs, "starts", op.type));
    ASSIGN_OR_RETURN(ends, GetAttr<std::vector<int64_t>>(op.attrs, "ends", op.type));
    return absl::OkStatus();
  }
};

class SliceKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* input, ctx->InputTensor("Input"));
    ASSIGN_OR_RETURN(
        Box box, SliceBox(ctx->op().type, input->shape(), attrs_.axes, attrs_.starts, attrs_.ends));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", input->dtype(), box.shape));
    return Gather(ctx, *input, box, out);
  }

 private:
  SliceAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("slice", "gpu").TypeConstraint("Input", kNumericTypes), SliceKernel);

class SliceGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* input, ctx->InputTensor("Input"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    const std::string& op = ctx->op().type;
    ASSIGN_OR_RETURN(Box box,
                     SliceBox(op, input->shape(), attrs_.axes, attrs_.starts, attrs_.ends));
    RETURN_IF_ERROR(
        CheckArgMeta(op, "Out@GRAD", dout->dtype(), dout->shape(), input->dtype(), box.shape));
    ASSIGN_OR_RETURN(Tensor * dinput,
                     ctx->AllocateOutput("Input@GRAD", input->dtype(), input->shape()));
    return ScatterIntoZeros(ctx, *dout, box, dinput);
  }

 private:
  SliceAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("slice_grad", "gpu").TypeConstraint("Input", kNumericTypes),
                SliceGradKernel);

// The crop of X that the Shape argument (host memory) and attr offsets
// describe.
absl::StatusOr<Box> CropRegion(const KernelContext* ctx, const Tensor& x,
                               const std::vector<int64_t>& offsets) {
  ASSIGN_OR_RETURN(const Tensor* shape, ctx->InputTensor("Shape"));
  const std::string& op = ctx->op().type;
  RETURN_IF_ERROR(CheckCropShapeArg(op, shape->dtype(), shape->shape()));
  const int32_t* v = shape->data<int32_t>();
  const std::vector<int64_t> sizes(v, v + shape->NumElements());
  return CropBox(op, x.shape(), sizes, offsets);
}

class CropTensorKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "offsets", &offsets_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Box box, CropRegion(ctx, *x, offsets_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), box.shape));
    return Gather(ctx, *x, box, out);
  }

 private:
  std::vector<int64_t> offsets_;
};

REGISTER_KERNEL(
    KernelDef("crop_tensor", "gpu").TypeConstraint("X", kNumericTypes).HostMemory("Shape"),
    CropTensorKernel);

class CropTensorGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "offsets", &offsets_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    ASSIGN_OR_RETURN(Box box, CropRegion(ctx, *x, offsets_));
    RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, "Out@GRAD", dout->dtype(), dout->shape(),
                                 x->dtype(), box.shape));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    return ScatterIntoZeros(ctx, *dout, box, dx);
  }

 private:
  std::vector<int64_t> offsets_;
};

REGISTER_KERNEL(
    KernelDef("crop_tensor_grad", "gpu").TypeConstraint("X", kNumericTypes).HostMemory("Shape"),
    CropTensorGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
