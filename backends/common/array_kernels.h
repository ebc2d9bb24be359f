// The kernels of the array ops (ops/array) for every backend whose memory
// the host can address: shape, slice(_grad) and crop_tensor(_grad). Each is
// written once, templated on an execution policy (serial_policy.h). A
// backend registers them under its device type with one line:
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h  //
//   host_kernels.h
//
// Each kernel class's static Contract is its registration line and RegisterArrayKernels lists them:
//   shape                  Input: all five dtypes; HostMemory(Out)
//   slice(_grad)           Input: float32, float64, int32, int64
//   crop_tensor(_grad)     X: float32, float64, int32, int64; HostMemory(Shape)
// so shape's int32 output is written on the host and crop_tensor reads its
// Shape there. Kernels validate their inputs with ops/array/shape_fns.h
// (InvalidArgument naming the op, the offending value and the shapes),
// compute synchronously through the policy and never copy between places.
// Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_ARRAY_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_ARRAY_KERNELS_H_

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/common/box.h"
#include "backends/common/elementwise.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "ops/array/shape_fns.h"
#include "ops/math/prologues.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace array_kernels_internal {

// The attrs of slice(_grad) and the region they keep of Input (SliceBox).
struct SliceAttrs {
  std::vector<int64_t> axes, starts, ends;

  absl::Status Read(const OpDesc& op);
  absl::StatusOr<Box> BoxOf(const KernelContext& ctx, const Tensor& input) const {
    return SliceBox(ctx.op().type, input.shape(), axes, starts, ends);
  }
};

// The region crop_tensor(_grad) keeps of X: the Shape input (1-D int32,
// read on the host) and attr offsets checked by CropBox.
absl::StatusOr<Box> GetCropBox(const KernelContext& ctx, const Tensor& x,
                               const std::vector<int64_t>& offsets);

// Out = x[box] for the forward ops (x is input `x_arg`); for the gradient
// ops, `grad_arg` = zeros of x's shape with the box = Out@GRAD (which must
// have x's dtype and the box's shape).
template <typename Types, typename Policy>
absl::Status ExtractBoxOutput(KernelContext* ctx, const char* x_arg, const Tensor& x,
                              const Box& box) {
  ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x.dtype(), box.shape));
  return DispatchType(Types(), x.dtype(), *ctx, x_arg, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ExtractBox<T, Policy>(x.data<T>(), x.shape(), box, out->data<T>());
    return absl::OkStatus();
  });
}
template <typename Types, typename Policy>
absl::Status InsertBoxGradient(KernelContext* ctx, const char* x_arg, const Tensor& x,
                               const Box& box) {
  const std::string grad_arg = GradVarName(x_arg);
  ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
  RETURN_IF_ERROR(
      CheckArgMeta(ctx->op().type, "Out@GRAD", dout->dtype(), dout->shape(), x.dtype(), box.shape));
  ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput(grad_arg, x.dtype(), x.shape()));
  return DispatchType(Types(), x.dtype(), *ctx, x_arg, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Fill<T, Policy>(T(0), dx->data<T>(), dx->NumElements());
    InsertBox<T, Policy>(dout->data<T>(), x.shape(), box, dx->data<T>());
    return absl::OkStatus();
  });
}

}  // namespace array_kernels_internal

// Out = Input's dims as int32 [rank] in host memory; Input's values are not
// read. A dim beyond int32 is InvalidArgument.
class ShapeKernel final : public OpKernel {
 public:
  using Types = AllTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("shape", device_type)
        .TypeConstraint("Input", Types::DataTypes())
        .HostMemory("Out");
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* input, ctx->InputTensor("Input"));
    ASSIGN_OR_RETURN(const std::vector<int32_t> dims, ShapeValues(ctx->op().type, input->shape()));
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx->AllocateOutput("Out", DataType::kInt32, Shape({input->shape().rank()})));
    std::copy(dims.begin(), dims.end(), out->data<int32_t>());
    return absl::OkStatus();
  }
};

// Out = Input[starts[i]:ends[i]] along axes[i] (attrs), numpy style:
// negative axes, starts and ends count from the end; starts and ends then
// clamp to [0, dim]; end <= start gives an empty dim. Out keeps Input's rank.
template <typename Policy>
class SliceKernel final : public OpKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("slice", device_type).TypeConstraint("Input", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("Input"));
    ASSIGN_OR_RETURN(const Box box, attrs_.BoxOf(*ctx, *x));
    return array_kernels_internal::ExtractBoxOutput<Types, Policy>(ctx, "Input", *x, box);
  }

 private:
  array_kernels_internal::SliceAttrs attrs_;
};

// Input@GRAD: zeros of Input's shape with the sliced region = Out@GRAD.
template <typename Policy>
class SliceGradKernel final : public OpKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("slice_grad", device_type).TypeConstraint("Input", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("Input"));
    ASSIGN_OR_RETURN(const Box box, attrs_.BoxOf(*ctx, *x));
    return array_kernels_internal::InsertBoxGradient<Types, Policy>(ctx, "Input", *x, box);
  }

 private:
  array_kernels_internal::SliceAttrs attrs_;
};

// Out = X[offsets[d] : offsets[d] + Shape[d]] for every dim d. Shape is a
// 1-D int32 host tensor of rank(X) values (-1: to the end of the dim);
// attr offsets is empty (zeros) or has rank(X) values. A crop that does not
// fit is InvalidArgument "op 'crop_tensor': crop of size 9 at offset 0
// exceeds dim 1 of X [1, 3, 8, 8]".
template <typename Policy>
class CropTensorKernel final : public OpKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("crop_tensor", device_type)
        .TypeConstraint("X", Types::DataTypes())
        .HostMemory("Shape");
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "offsets", &offsets_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Box box, array_kernels_internal::GetCropBox(*ctx, *x, offsets_));
    return array_kernels_internal::ExtractBoxOutput<Types, Policy>(ctx, "X", *x, box);
  }

 private:
  std::vector<int64_t> offsets_;
};

// X@GRAD: zeros of X's shape with the cropped region = Out@GRAD.
template <typename Policy>
class CropTensorGradKernel final : public OpKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("crop_tensor_grad", device_type)
        .TypeConstraint("X", Types::DataTypes())
        .HostMemory("Shape");
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "offsets", &offsets_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Box box, array_kernels_internal::GetCropBox(*ctx, *x, offsets_));
    return array_kernels_internal::InsertBoxGradient<Types, Policy>(ctx, "X", *x, box);
  }

 private:
  std::vector<int64_t> offsets_;
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterArrayKernels(const std::string& device_type) {
  RegisterByContract<ShapeKernel, SliceKernel<Policy>, SliceGradKernel<Policy>,
                     CropTensorKernel<Policy>, CropTensorGradKernel<Policy>>(device_type);
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_ARRAY_KERNELS_H_
