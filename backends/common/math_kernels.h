// The kernels of the math ops (ops/math) for every backend whose memory the
// host can address: fill_constant, elementwise_add/sub/mul/div(_grad),
// matmul(_grad), mul(_grad), scale, cast, relu/sigmoid/tanh(_grad) and
// reduce_sum/reduce_mean(_grad). Each kernel is written once, templated on
// an execution policy (serial_policy.h) that supplies the backend's
// threading and GEMM. A backend registers them all under its device type
// with one line:
//
//   // backends/sim/sim_kernels.cc, in an anonymous namespace
//   const MathKernelsRegistrar<SerialPolicy> math_kernels("sim");
//
// RegisterMathKernels holds the registration lines, i.e. the contract of
// each kernel: op, device type and dtypes (all arguments in device memory):
//   fill_constant         attr dtype: float32, float64, int32, int64, bool
//   elementwise_add/sub/mul/div, elementwise_add/sub/mul_grad, scale
//                         X: float32, float64, int32, int64
//   elementwise_div_grad, matmul(_grad), mul(_grad), reduce_sum/mean(_grad)
//                         X: float32, float64
//   relu, sigmoid, tanh   X: float32, float64 (their _grad ops: Out)
//   cast                  X and attr out_dtype: all five
// Semantics, including edge cases, are documented on each kernel below.
//
// Kernels validate their inputs with ops/math/shape_fns.h (InvalidArgument
// naming the op, arguments, shapes and dtypes), compute synchronously on
// the calling thread (through the policy) and never copy between places.
// Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_MATH_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_MATH_KERNELS_H_

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/common/activation.h"
#include "backends/common/broadcast.h"
#include "backends/common/elementwise.h"
#include "backends/common/flat_matmul.h"
#include "backends/common/gemm.h"
#include "backends/common/kernel_status.h"
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

// Shapes of elementwise_<op>(_grad): Y aligned to X by `axis` and the
// broadcast output. Validates dtypes and shapes.
struct BinaryShapes {
  Shape y_aligned;
  Shape out;
};
absl::StatusOr<BinaryShapes> GetBinaryShapes(const KernelContext& ctx, const Tensor& x,
                                             const Tensor& y, int64_t axis);

// The attrs of reduce_sum / reduce_mean (and their gradients).
struct ReduceAttrs {
  std::vector<int64_t> dims;
  bool keep_dim = false;
  bool reduce_all = false;
};
absl::Status ReadReduceAttrs(const OpDesc& op, ReduceAttrs* attrs);
// ReduceShape of X with `attrs` (and CheckMeanCount for a mean).
absl::StatusOr<ReduceDims> GetReduceDims(const KernelContext& ctx, const Shape& x,
                                         const ReduceAttrs& attrs, bool mean);

// Attrs x_num_col_dims and y_num_col_dims of mul(_grad).
absl::Status ReadNumColDims(const OpDesc& op, int64_t* xn, int64_t* yn);
// mul's geometry (FlatMatmulShape) after checking X and Y share a float
// dtype.
absl::StatusOr<FlatMatmulDims> GetMulDims(const KernelContext& ctx, const Tensor& x,
                                          const Tensor& y, int64_t xn, int64_t yn);

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

// Out = X <op> Y (elementwise_add, _sub, _mul, _div) with numpy
// broadcasting after aligning Y to X by attr `axis` (AlignForBroadcast: -1
// aligns trailing dims, axis >= 0 puts Y's dims at X's dims
// [axis, axis + rank(Y))). Either side may be broadcast; empty and 0-d
// tensors follow the same rules. Integers wrap around; integer division
// truncates toward zero, and a zero divisor is InvalidArgument naming Y's
// variable and the position of the zero in Y, checked before dividing.
template <typename Policy, BinaryOp kOp>
class ElementwiseKernel final : public OpKernel {
 public:
  using Types = NumericTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(math_kernels_internal::BinaryShapes shapes,
                     math_kernels_internal::GetBinaryShapes(*ctx, *x, *y, axis_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), shapes.out));
    if (out->NumElements() == 0) return absl::OkStatus();
    const BroadcastLayout layout(shapes.out, {x->shape(), shapes.y_aligned});
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* yd = y->data<T>();
      if constexpr (kOp == BinaryOp::kDiv && std::is_integral_v<T>) {
        const int64_t n = y->NumElements();
        const int64_t zero = std::find(yd, yd + n, T(0)) - yd;
        if (zero < n) {
          return ctx->InvalidArgument(absl::StrCat("integer division by zero: Y '",
                                                   ctx->InputName("Y"), "' ", y->shape().ToString(),
                                                   " is 0 at position ", zero));
        }
      }
      BroadcastBinary<T, Policy>(layout, x->data<T>(), yd, out->data<T>(), Binary<kOp>());
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
};

// X@GRAD and Y@GRAD (each optional: only bound outputs are computed) of
// elementwise_<op> from Out@GRAD (G), each summed over the dims along
// which its input was broadcast and shaped like the input:
//   add  G, G            sub  G, -G
//   mul  G * Y, G * X    div  G / Y, -G * Out / Y (reads the forward Out)
// Out@GRAD (and Out) must have the forward output's shape and X's dtype.
// An empty Out@GRAD gives zero gradients. div's gradient is float only;
// the others take integers too (wrapping around).
template <typename Policy, BinaryOp kOp>
class ElementwiseGradKernel final : public OpKernel {
 public:
  using Types = std::conditional_t<kOp == BinaryOp::kDiv, FloatTypes, NumericTypes>;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    ASSIGN_OR_RETURN(math_kernels_internal::BinaryShapes shapes,
                     math_kernels_internal::GetBinaryShapes(*ctx, *x, *y, axis_));
    RETURN_IF_ERROR(math_kernels_internal::CheckOutGrad(*ctx, *dout, x->dtype(), shapes.out));
    const Tensor* out = nullptr;
    if constexpr (kOp == BinaryOp::kDiv) {
      ASSIGN_OR_RETURN(out, ctx->InputTensor("Out"));
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, "Out", out->dtype(), out->shape(), x->dtype(), shapes.out));
    }
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const Shape& os = shapes.out;
      const int64_t n = os.num_elements();
      const T* g = dout->data<T>();
      // The gradient of input `in` (aligned to Out as `aligned`) into output
      // `arg`: its unreduced form over Out's shape, written by pre(buffer),
      // summed over the broadcast dims. The sum is skipped when nothing is
      // broadcast (then the shapes hold the same elements in the same order).
      auto grad = [&](const char* arg, const Tensor& in, const Shape& aligned,
                      auto&& pre) -> absl::Status {
        if (ctx->OutputVar(arg) == nullptr) return absl::OkStatus();
        ASSIGN_OR_RETURN(Tensor * d, ctx->AllocateOutput(arg, in.dtype(), in.shape()));
        T* dd = d->data<T>();
        if (in.NumElements() == n) {
          pre(dd);
        } else {
          std::vector<T> full(n);
          pre(full.data());
          SumToShape<T, Policy>(full.data(), os, dd, aligned);
        }
        return absl::OkStatus();
      };
      // buf = G <op> (the other operand broadcast), or G itself.
      auto times = [&](const T* other, const Shape& other_aligned, auto fn) {
        return [&, other, other_aligned, fn](T* buf) {
          BroadcastBinary<T, Policy>(BroadcastLayout(os, {os, other_aligned}), g, other, buf, fn);
        };
      };
      auto copy = [&](T* buf) { std::copy(g, g + n, buf); };
      const T* xd = x->data<T>();
      const T* yd = y->data<T>();
      if constexpr (kOp == BinaryOp::kAdd) {
        RETURN_IF_ERROR(grad("X@GRAD", *x, x->shape(), copy));
        RETURN_IF_ERROR(grad("Y@GRAD", *y, shapes.y_aligned, copy));
      } else if constexpr (kOp == BinaryOp::kSub) {
        RETURN_IF_ERROR(grad("X@GRAD", *x, x->shape(), copy));
        RETURN_IF_ERROR(grad("Y@GRAD", *y, shapes.y_aligned, [&](T* buf) {
          Map<T, Policy>(g, buf, n, [](T v) { return Binary<BinaryOp::kSub>()(T(0), v); });
        }));
      } else if constexpr (kOp == BinaryOp::kMul) {
        RETURN_IF_ERROR(
            grad("X@GRAD", *x, x->shape(), times(yd, shapes.y_aligned, Binary<BinaryOp::kMul>())));
        RETURN_IF_ERROR(
            grad("Y@GRAD", *y, shapes.y_aligned, times(xd, x->shape(), Binary<BinaryOp::kMul>())));
      } else {
        RETURN_IF_ERROR(
            grad("X@GRAD", *x, x->shape(), times(yd, shapes.y_aligned, Binary<BinaryOp::kDiv>())));
        RETURN_IF_ERROR(grad("Y@GRAD", *y, shapes.y_aligned, [&](T* buf) {
          Map2<T, Policy>(g, out->data<T>(), buf, n, Binary<BinaryOp::kMul>());
          BroadcastBinary<T, Policy>(BroadcastLayout(os, {os, shapes.y_aligned}), buf, yd, buf,
                                     [](T a, T b) { return -a / b; });
        }));
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
      return WithOpName(*ctx, BatchedGemm<T, Policy>(g, d.batch, d.x_batched ? d.m * d.k : 0,
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
        RETURN_IF_ERROR(WithOpName(*ctx, s));
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
        RETURN_IF_ERROR(WithOpName(*ctx, s));
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

// Out = f(X) for the activations relu, sigmoid and tanh (activation.h:
// sigmoid never overflows exp); float32 / float64, Out has X's shape.
template <typename Policy, Activation kAct>
class ActivationKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Map<T, Policy>(x->data<T>(), out->data<T>(), x->NumElements(), Activate<kAct>());
      return absl::OkStatus();
    });
  }
};

// X@GRAD of relu / sigmoid / tanh from the forward Out and Out@GRAD (same
// dtype and shape): Out@GRAD where Out > 0 / Out@GRAD * Out * (1 - Out) /
// Out@GRAD * (1 - Out^2).
template <typename Policy, Activation kAct>
class ActivationGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* out, ctx->InputTensor("Out"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    RETURN_IF_ERROR(math_kernels_internal::CheckOutGrad(*ctx, *dout, out->dtype(), out->shape()));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", out->dtype(), out->shape()));
    return DispatchType(Types(), out->dtype(), *ctx, "Out", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Map2<T, Policy>(out->data<T>(), dout->data<T>(), dx->data<T>(), out->NumElements(),
                      ActivationGrad<kAct>());
      return absl::OkStatus();
    });
  }
};

// Out = the sum (reduce_sum) or mean (reduce_mean) of X over attr dim
// (negative dims count from the end; empty or attr reduce_all: every dim),
// shaped as ReduceShape says: the reduced dims removed ([1] when none is
// left) or kept as 1 (attr keep_dim). Sums add in a fixed order, float32 in
// double. Empty X sums to zeros; a mean over no elements is InvalidArgument.
template <typename Policy, bool kMean>
class ReduceKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    return math_kernels_internal::ReadReduceAttrs(op, &attrs_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const ReduceDims r,
                     math_kernels_internal::GetReduceDims(*ctx, x->shape(), attrs_, kMean));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), r.out));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out->data<T>();
      SumToShape<T, Policy>(x->data<T>(), x->shape(), o, r.kept);
      if (kMean) {
        const T count = static_cast<T>(r.count);
        Map<T, Policy>(o, o, out->NumElements(), [count](T v) { return v / count; });
      }
      return absl::OkStatus();
    });
  }

 private:
  math_kernels_internal::ReduceAttrs attrs_;
};

// X@GRAD of reduce_sum / reduce_mean (the forward's attrs): Out@GRAD
// (shaped like the forward Out, X's dtype) broadcast back over the reduced
// dims, divided by the elements per mean for reduce_mean.
template <typename Policy, bool kMean>
class ReduceGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    return math_kernels_internal::ReadReduceAttrs(op, &attrs_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    ASSIGN_OR_RETURN(const ReduceDims r,
                     math_kernels_internal::GetReduceDims(*ctx, x->shape(), attrs_, kMean));
    RETURN_IF_ERROR(math_kernels_internal::CheckOutGrad(*ctx, *dout, x->dtype(), r.out));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    if (dx->NumElements() == 0) return absl::OkStatus();
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T count = static_cast<T>(r.count);
      BroadcastUnary<T, Policy>(BroadcastLayout(x->shape(), {r.kept}), dout->data<T>(),
                                dx->data<T>(), [count](T v) { return kMean ? v / count : v; });
      return absl::OkStatus();
    });
  }

 private:
  math_kernels_internal::ReduceAttrs attrs_;
};

// Out = X * Y as matrices (Paddle's mul): X's first attr x_num_col_dims
// dims form the rows and the rest the columns, Y likewise with
// y_num_col_dims (FlatMatmulShape); Out is X.dims[:x_num_col_dims] +
// Y.dims[y_num_col_dims:]. float32 on the cpu goes through the policy's
// GEMM (oneDNN sgemm). Inner dim 0 gives zeros.
template <typename Policy>
class MulKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    return math_kernels_internal::ReadNumColDims(op, &xn_, &yn_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const FlatMatmulDims d,
                     math_kernels_internal::GetMulDims(*ctx, *x, *y, xn_, yn_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), d.out));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      return WithOpName(*ctx, FlatMatmul<T, Policy>(x->data<T>(), y->data<T>(), nullptr, d.m, d.k,
                                                    d.n, out->data<T>()));
    });
  }

 private:
  int64_t xn_ = 1, yn_ = 1;
};

// X@GRAD = Out@GRAD * Y^T and Y@GRAD = X^T * Out@GRAD as matrices, shaped
// like X and Y (each optional: only bound outputs are computed), with the
// forward's attrs. Out@GRAD has the forward Out's shape and X's dtype.
template <typename Policy>
class MulGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    return math_kernels_internal::ReadNumColDims(op, &xn_, &yn_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    ASSIGN_OR_RETURN(const FlatMatmulDims d,
                     math_kernels_internal::GetMulDims(*ctx, *x, *y, xn_, yn_));
    RETURN_IF_ERROR(math_kernels_internal::CheckOutGrad(*ctx, *dout, x->dtype(), d.out));
    Tensor* dx = nullptr;
    Tensor* dy = nullptr;
    if (ctx->OutputVar("X@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    }
    if (ctx->OutputVar("Y@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dy, ctx->AllocateOutput("Y@GRAD", y->dtype(), y->shape()));
    }
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      return WithOpName(
          *ctx, FlatMatmulGrad<T, Policy>(x->data<T>(), y->data<T>(), dout->data<T>(), d.m, d.k,
                                          d.n, dx == nullptr ? nullptr : dx->data<T>(),
                                          dy == nullptr ? nullptr : dy->data<T>()));
    });
  }

 private:
  int64_t xn_ = 1, yn_ = 1;
};

namespace math_kernels_internal {

// Registers Kernel for `op` and GradKernel for `op`_grad, with type
// constraints on their arguments `arg` and `grad_arg`.
template <typename Kernel, typename GradKernel>
void RegisterPair(const std::string& device_type, const std::string& op, const char* arg,
                  const char* grad_arg) {
  KernelRegistry& registry = KernelRegistry::Global();
  registry.Register(KernelDef(op, device_type).TypeConstraint(arg, Kernel::Types::DataTypes()),
                    MakeKernelFactory<Kernel>());
  registry.Register(
      KernelDef(op + "_grad", device_type).TypeConstraint(grad_arg, GradKernel::Types::DataTypes()),
      MakeKernelFactory<GradKernel>());
}
template <typename Policy, BinaryOp kOp>
void RegisterElementwise(const std::string& device_type, const std::string& op) {
  RegisterPair<ElementwiseKernel<Policy, kOp>, ElementwiseGradKernel<Policy, kOp>>(device_type, op,
                                                                                   "X", "X");
}
template <typename Policy, Activation kAct>
void RegisterActivation(const std::string& device_type, const std::string& op) {
  RegisterPair<ActivationKernel<Policy, kAct>, ActivationGradKernel<Policy, kAct>>(device_type, op,
                                                                                   "X", "Out");
}
template <typename Policy, bool kMean>
void RegisterReduce(const std::string& device_type, const std::string& op) {
  RegisterPair<ReduceKernel<Policy, kMean>, ReduceGradKernel<Policy, kMean>>(device_type, op, "X",
                                                                             "X");
}

}  // namespace math_kernels_internal

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterMathKernels(const std::string& device_type) {
  KernelRegistry& registry = KernelRegistry::Global();
  registry.Register(KernelDef("fill_constant", device_type)
                        .TypeConstraint("dtype", FillConstantKernel<Policy>::Types::DataTypes()),
                    MakeKernelFactory<FillConstantKernel<Policy>>());
  math_kernels_internal::RegisterElementwise<Policy, BinaryOp::kAdd>(device_type,
                                                                     "elementwise_add");
  math_kernels_internal::RegisterElementwise<Policy, BinaryOp::kSub>(device_type,
                                                                     "elementwise_sub");
  math_kernels_internal::RegisterElementwise<Policy, BinaryOp::kMul>(device_type,
                                                                     "elementwise_mul");
  math_kernels_internal::RegisterElementwise<Policy, BinaryOp::kDiv>(device_type,
                                                                     "elementwise_div");
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
  math_kernels_internal::RegisterActivation<Policy, Activation::kRelu>(device_type, "relu");
  math_kernels_internal::RegisterActivation<Policy, Activation::kSigmoid>(device_type, "sigmoid");
  math_kernels_internal::RegisterActivation<Policy, Activation::kTanh>(device_type, "tanh");
  math_kernels_internal::RegisterReduce<Policy, /*kMean=*/false>(device_type, "reduce_sum");
  math_kernels_internal::RegisterReduce<Policy, /*kMean=*/true>(device_type, "reduce_mean");
  registry.Register(
      KernelDef("mul", device_type).TypeConstraint("X", MulKernel<Policy>::Types::DataTypes()),
      MakeKernelFactory<MulKernel<Policy>>());
  registry.Register(KernelDef("mul_grad", device_type)
                        .TypeConstraint("X", MulGradKernel<Policy>::Types::DataTypes()),
                    MakeKernelFactory<MulGradKernel<Policy>>());
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
