// The kernels of the math ops (ops/math) for every backend whose memory the
// host can address: fill_constant, elementwise_add(_grad), matmul(_grad),
// scale and cast. Each kernel is written once, templated on an execution
// policy (serial_policy.h) that supplies the backend's threading and GEMM.
// A backend registers them all under its device type with one line:
//
//   // backends/sim/sim_kernels.cc, in an anonymous namespace
//   const MathKernelsRegistrar<SerialPolicy> math_kernels("sim");
//
// RegisterMathKernels holds the registration lines, i.e. the contract of
// each kernel: op, device type and dtypes (all arguments in device memory):
//   fill_constant         attr dtype: float32, float64, int32, int64, bool
//   elementwise_add(_grad), scale   X: float32, float64, int32, int64
//   matmul(_grad)                    X: float32, float64
//   cast                  X and attr out_dtype: all five
// Semantics, including edge cases, are documented on each kernel below.
//
// Kernels validate their inputs with ops/math/shape_fns.h (InvalidArgument
// naming the op, arguments, shapes and dtypes), compute synchronously on
// the calling thread (through the policy) and never copy between places.
// Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_MATH_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_MATH_KERNELS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/common/broadcast.h"
#include "backends/common/elementwise.h"
#include "backends/common/gemm.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "framework/types/shape.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace math_kernels_internal {

// InvalidArgument unless X and Y have the same dtype; names op, dtypes and
// shapes.
absl::Status CheckSameDtype(const KernelContext& ctx, const Tensor& x, const Tensor& y);
// InvalidArgument unless Out@GRAD is `dtype` with shape `expected`.
absl::Status CheckOutGrad(const KernelContext& ctx, const Tensor& dout, DataType dtype,
                          const Shape& expected);
// Prefixes a status from a backend's GEMM with "op '<type>': ".
absl::Status WithOpName(const KernelContext& ctx, const absl::Status& status);

// Shapes of elementwise_add(_grad): Y aligned to X by `axis` and the
// broadcast output. Validates dtypes and shapes.
struct AddShapes {
  Shape y_aligned;
  Shape out;
};
absl::StatusOr<AddShapes> GetAddShapes(const KernelContext& ctx, const Tensor& x, const Tensor& y,
                                       int64_t axis);

// GemmArgs for C = alpha * op(A) * op(B) with a dense C (ldc = n), as the
// matmul kernels compute their products.
template <typename T>
GemmArgs<T> MakeGemm(bool trans_a, const T* a, int64_t lda, bool trans_b, const T* b, int64_t ldb,
                     T* c, int64_t m, int64_t n, int64_t k, double alpha) {
  GemmArgs<T> g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = static_cast<T>(alpha);
  g.a = a;
  g.lda = lda;
  g.b = b;
  g.ldb = ldb;
  g.c = c;
  g.ldc = n;
  return g;
}

}  // namespace math_kernels_internal

// Out: a tensor of attr `shape` filled with attr `value` converted to attr
// `dtype` (integers: static_cast, i.e. truncated toward zero; bool: value
// != 0). A negative dim is InvalidArgument at Init.
template <typename Policy>
class FillConstantKernel final : public OpKernel {
 public:
  using Types = AllTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                     GetAttr<std::vector<int64_t>>(op.attrs, "shape", op.type));
    absl::StatusOr<Shape> shape = Shape::Make(dims);
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op.type, "': attribute 'shape': ", shape.status().message()));
    }
    shape_ = *std::move(shape);
    ASSIGN_OR_RETURN(value_, GetAttr<double>(op.attrs, "value", op.type));
    ASSIGN_OR_RETURN(dtype_, GetAttr<DataType>(op.attrs, "dtype", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", dtype_, shape_));
    return DispatchType(Types(), dtype_, *ctx, "dtype", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Fill<T, Policy>(ConvertValue<T>(value_), out->data<T>(), out->NumElements());
      return absl::OkStatus();
    });
  }

 private:
  Shape shape_;
  double value_ = 0;
  DataType dtype_ = DataType::kFloat32;
};

// Out = X + Y with numpy broadcasting after aligning Y to X by attr `axis`
// (AlignForBroadcast: -1 aligns trailing dims, axis >= 0 puts Y's dims at
// X's dims [axis, axis + rank(Y))). Either side may be broadcast; empty
// and 0-d tensors follow the same rules. Integers wrap around.
template <typename Policy>
class ElementwiseAddKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(math_kernels_internal::AddShapes shapes,
                     math_kernels_internal::GetAddShapes(*ctx, *x, *y, axis_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), shapes.out));
    if (out->NumElements() == 0) return absl::OkStatus();
    const BroadcastLayout layout(shapes.out, {x->shape(), shapes.y_aligned});
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      BroadcastAdd<T, Policy>(layout, x->data<T>(), y->data<T>(), out->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
};

// X@GRAD and Y@GRAD (each optional: only bound outputs are computed) of
// elementwise_add: Out@GRAD summed over the dims along which that input was
// broadcast, shaped like the input. Out@GRAD must have the forward output's
// shape and X's dtype. An empty Out@GRAD gives zero gradients.
template <typename Policy>
class ElementwiseAddGradKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    ASSIGN_OR_RETURN(math_kernels_internal::AddShapes shapes,
                     math_kernels_internal::GetAddShapes(*ctx, *x, *y, axis_));
    RETURN_IF_ERROR(math_kernels_internal::CheckOutGrad(*ctx, *dout, x->dtype(), shapes.out));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (ctx->OutputVar("X@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
        SumToShape<T, Policy>(dout->data<T>(), shapes.out, dx->data<T>(), x->shape());
      }
      if (ctx->OutputVar("Y@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dy, ctx->AllocateOutput("Y@GRAD", y->dtype(), y->shape()));
        SumToShape<T, Policy>(dout->data<T>(), shapes.out, dy->data<T>(), shapes.y_aligned);
      }
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
};

// Out = alpha * op(X) * op(Y), op transposing the last two dims when attr
// transpose_X / transpose_Y. Batch dims (all but the last two) are equal,
// or one side has none and is shared by every batch (MatmulShape). K == 0
// gives zeros; any other empty dim gives an empty Out.
template <typename Policy>
class MatmulKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(tx_, GetAttr<bool>(op.attrs, "transpose_X", op.type));
    ASSIGN_OR_RETURN(ty_, GetAttr<bool>(op.attrs, "transpose_Y", op.type));
    ASSIGN_OR_RETURN(alpha_, GetAttr<double>(op.attrs, "alpha", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    RETURN_IF_ERROR(math_kernels_internal::CheckSameDtype(*ctx, *x, *y));
    ASSIGN_OR_RETURN(MatmulDims d, MatmulShape(ctx->op().type, x->shape(), y->shape(), tx_, ty_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), d.out));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const GemmArgs<T> g = math_kernels_internal::MakeGemm<T>(
          tx_, x->data<T>(), x->shape().dims().back(), ty_, y->data<T>(), y->shape().dims().back(),
          out->data<T>(), d.m, d.n, d.k, alpha_);
      return math_kernels_internal::WithOpName(
          *ctx, BatchedGemm<T, Policy>(g, d.batch, d.x_batched ? d.m * d.k : 0,
                                       d.y_batched ? d.k * d.n : 0, d.m * d.n));
    });
  }

 private:
  bool tx_ = false;
  bool ty_ = false;
  double alpha_ = 1;
};

// X@GRAD and Y@GRAD (each optional: only bound outputs are computed) of
// matmul, with the forward's attrs. With G = Out@GRAD:
//   X@GRAD = alpha * G * op(Y)^T      (transpose_X: alpha * op(Y) * G^T)
//   Y@GRAD = alpha * op(X)^T * G      (transpose_Y: alpha * G^T * op(X))
// per batch; the gradient of a side shared by the batch is summed over the
// batch. Out@GRAD must have the forward output's shape and X's dtype.
template <typename Policy>
class MatmulGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(tx_, GetAttr<bool>(op.attrs, "transpose_X", op.type));
    ASSIGN_OR_RETURN(ty_, GetAttr<bool>(op.attrs, "transpose_Y", op.type));
    ASSIGN_OR_RETURN(alpha_, GetAttr<double>(op.attrs, "alpha", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    RETURN_IF_ERROR(math_kernels_internal::CheckSameDtype(*ctx, *x, *y));
    ASSIGN_OR_RETURN(MatmulDims d, MatmulShape(ctx->op().type, x->shape(), y->shape(), tx_, ty_));
    RETURN_IF_ERROR(math_kernels_internal::CheckOutGrad(*ctx, *dout, x->dtype(), d.out));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using math_kernels_internal::MakeGemm;
      const int64_t m = d.m, n = d.n, k = d.k;
      const int64_t ldx = x->shape().dims().back(), ldy = y->shape().dims().back();
      const T* xd = x->data<T>();
      const T* yd = y->data<T>();
      const T* g = dout->data<T>();
      // Batch strides: 0 for a side shared by the batch.
      const int64_t sx = d.x_batched ? m * k : 0, sy = d.y_batched ? k * n : 0;
      const int64_t sg = m * n;
      if (ctx->OutputVar("X@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
        T* c = dx->data<T>();
        const absl::Status s =
            tx_ ? BatchedGemm<T, Policy>(  // [k, m] = op(Y) * G^T
                      MakeGemm<T>(ty_, yd, ldy, true, g, n, c, k, m, n, alpha_), d.batch, sy, sg,
                      sx)
                : BatchedGemm<T, Policy>(  // [m, k] = G * op(Y)^T
                      MakeGemm<T>(false, g, n, !ty_, yd, ldy, c, m, k, n, alpha_), d.batch, sg, sy,
                      sx);
        RETURN_IF_ERROR(math_kernels_internal::WithOpName(*ctx, s));
      }
      if (ctx->OutputVar("Y@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dy, ctx->AllocateOutput("Y@GRAD", y->dtype(), y->shape()));
        T* c = dy->data<T>();
        const absl::Status s =
            ty_ ? BatchedGemm<T, Policy>(  // [n, k] = G^T * op(X)
                      MakeGemm<T>(true, g, n, tx_, xd, ldx, c, n, k, m, alpha_), d.batch, sg, sx,
                      sy)
                : BatchedGemm<T, Policy>(  // [k, n] = op(X)^T * G
                      MakeGemm<T>(!tx_, xd, ldx, false, g, n, c, k, n, m, alpha_), d.batch, sx, sg,
                      sy);
        RETURN_IF_ERROR(math_kernels_internal::WithOpName(*ctx, s));
      }
      return absl::OkStatus();
    });
  }

 private:
  bool tx_ = false;
  bool ty_ = false;
  double alpha_ = 1;
};

// Out = scale * X + bias if attr bias_after_scale, else scale * (X + bias).
// float32 / float64 compute in their own type; int32 / int64 compute in
// double and convert back with static_cast (truncation toward zero).
template <typename Policy>
class ScaleKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(scale_, GetAttr<double>(op.attrs, "scale", op.type));
    ASSIGN_OR_RETURN(bias_, GetAttr<double>(op.attrs, "bias", op.type));
    ASSIGN_OR_RETURN(bias_after_scale_, GetAttr<bool>(op.attrs, "bias_after_scale", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Scale<T, Policy>(x->data<T>(), out->data<T>(), x->NumElements(), scale_, bias_,
                       bias_after_scale_);
      return absl::OkStatus();
    });
  }

 private:
  double scale_ = 1;
  double bias_ = 0;
  bool bias_after_scale_ = true;
};

// Out = X converted to attr out_dtype, any of the five dtypes to any:
// numbers static_cast (float to int truncates toward zero), to bool is
// X != 0, from bool is 0 / 1; the same dtype copies.
template <typename Policy>
class CastKernel final : public OpKernel {
 public:
  using Types = AllTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(out_dtype_, GetAttr<DataType>(op.attrs, "out_dtype", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", out_dtype_, x->shape()));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto from) {
      using From = typename decltype(from)::type;
      return DispatchType(Types(), out_dtype_, *ctx, "out_dtype", [&](auto to) {
        using To = typename decltype(to)::type;
        Cast<To, From, Policy>(x->data<From>(), out->data<To>(), x->NumElements());
        return absl::OkStatus();
      });
    });
  }

 private:
  DataType out_dtype_ = DataType::kFloat32;
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterMathKernels(const std::string& device_type) {
  KernelRegistry& registry = KernelRegistry::Global();
  registry.Register(KernelDef("fill_constant", device_type)
                        .TypeConstraint("dtype", FillConstantKernel<Policy>::Types::DataTypes()),
                    MakeKernelFactory<FillConstantKernel<Policy>>());
  registry.Register(KernelDef("elementwise_add", device_type)
                        .TypeConstraint("X", ElementwiseAddKernel<Policy>::Types::DataTypes()),
                    MakeKernelFactory<ElementwiseAddKernel<Policy>>());
  registry.Register(KernelDef("elementwise_add_grad", device_type)
                        .TypeConstraint("X", ElementwiseAddGradKernel<Policy>::Types::DataTypes()),
                    MakeKernelFactory<ElementwiseAddGradKernel<Policy>>());
  registry.Register(KernelDef("matmul", device_type)
                        .TypeConstraint("X", MatmulKernel<Policy>::Types::DataTypes()),
                    MakeKernelFactory<MatmulKernel<Policy>>());
  registry.Register(KernelDef("matmul_grad", device_type)
                        .TypeConstraint("X", MatmulGradKernel<Policy>::Types::DataTypes()),
                    MakeKernelFactory<MatmulGradKernel<Policy>>());
  registry.Register(
      KernelDef("scale", device_type).TypeConstraint("X", ScaleKernel<Policy>::Types::DataTypes()),
      MakeKernelFactory<ScaleKernel<Policy>>());
  registry.Register(KernelDef("cast", device_type)
                        .TypeConstraint("X", CastKernel<Policy>::Types::DataTypes())
                        .TypeConstraint("out_dtype", CastKernel<Policy>::Types::DataTypes()),
                    MakeKernelFactory<CastKernel<Policy>>());
}

// Calls RegisterMathKernels<Policy>(device_type) during static
// initialisation; define one in the backend's kernel .cc file, whose
// cc_library must have alwayslink = True.
template <typename Policy>
struct MathKernelsRegistrar {
  explicit MathKernelsRegistrar(const std::string& device_type) {
    RegisterMathKernels<Policy>(device_type);
  }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_MATH_KERNELS_H_
