// The kernels of the math ops (ops/math) for every backend whose memory the
// host can address: fill_constant, elementwise_add/sub/mul/div(_grad),
// matmul(_grad), mul(_grad), scale, cast, relu/sigmoid/tanh/gelu(_grad) and
// reduce_sum/reduce_mean(_grad). Each kernel is written once, templated on
// an execution policy (serial_policy.h) that supplies the backend's
// threading and GEMM. A backend registers them all under its device type
// with one line:
//
//   // backends/sim/sim_kernels.cc, in an anonymous namespace
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h
//
// Each kernel class's static Contract is its registration line, i.e. its
// contract: op, device type and dtypes (all arguments in device memory);
// RegisterMathKernels lists the classes. In short:
//   fill_constant         attr dtype: float32, float64, int32, int64, bool, bfloat16, float16
//   elementwise_add/sub/mul/div, elementwise_add/sub/mul_grad
//                         X: float32, float64, int32, int64, bfloat16, float16
//   scale                 X: float32, float64, int32, int64
//   elementwise_div_grad, matmul(_grad), mul(_grad)
//                         X: float32, float64, bfloat16, float16
//   reduce_sum/mean(_grad) X: float32, float64
//   relu, sigmoid, tanh   X: float32, float64 (their _grad ops: Out)
//   gelu                  X: float32, float64 (gelu_grad: X)
//   cast                  X and attr out_dtype: all seven
// Semantics, including edge cases, are documented on each kernel below.
// bfloat16 / float16 compute in float32 and round each output once
// (low_precision.h).
//
// Kernels validate their inputs with ops/math/prologues.h, as the gpu kernels do
// (InvalidArgument naming the op, arguments, shapes and dtypes), compute synchronously on
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
#include "backends/common/activation_of.h"
#include "backends/common/broadcast.h"
#include "backends/common/elementwise.h"
#include "backends/common/flat_matmul.h"
#include "backends/common/gemm.h"
#include "backends/common/kernel_status.h"
#include "backends/common/low_precision.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "framework/types/shape.h"
#include "ops/math/prologues.h"
#include "ops/math/shape_fns.h"

namespace tandem {

// The op types computed by ElementwiseKernel<kOp> and ActivationKernel<kAct>
// (their gradient ops append "_grad"); gelu's two forms are one op.
constexpr const char* ElementwiseOpType(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "elementwise_add";
    case BinaryOp::kSub:
      return "elementwise_sub";
    case BinaryOp::kMul:
      return "elementwise_mul";
    case BinaryOp::kDiv:
      return "elementwise_div";
  }
  return "";
}
constexpr const char* ActivationOpType(Activation act) {
  switch (act) {
    case Activation::kRelu:
      return "relu";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
    case Activation::kGelu:
    case Activation::kGeluTanh:
      return "gelu";
  }
  return "";
}
namespace math_kernels_internal {

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
  using Types = AllTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("fill_constant", device_type).TypeConstraint("dtype", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", attrs_.dtype, attrs_.shape));
    return DispatchType(Types(), attrs_.dtype, *ctx, "dtype", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Fill<T, Policy>(ConvertValue<T>(attrs_.value), out->data<T>(), out->NumElements());
      return absl::OkStatus();
    });
  }

 private:
  prologue::FillConstantAttrs attrs_;
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
  using Types = NumericTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef(ElementwiseOpType(kOp), device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const prologue::BinaryShapes shapes,
                     prologue::GetBinaryShapes(*ctx, *x, *y, axis_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), shapes.out));
    if (out->NumElements() == 0) return absl::OkStatus();
    const BroadcastLayout layout(shapes.out, {x->shape(), shapes.y_aligned});
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if constexpr (kOp == BinaryOp::kDiv && std::is_integral_v<T>) {
        const T* yd = y->data<T>();
        const int64_t n = y->NumElements();
        const int64_t zero = std::find(yd, yd + n, T(0)) - yd;
        if (zero < n) {
          return ctx->InvalidArgument(absl::StrCat("integer division by zero: Y '",
                                                   ctx->InputName("Y"), "' ", y->shape().ToString(),
                                                   " is 0 at position ", zero));
        }
      }
      ComputeBuffers<T, Policy> buffers;
      BroadcastBinary<ComputeTypeOf<T>, Policy>(layout, buffers.In(x), buffers.In(y),
                                                buffers.Out(out), Binary<kOp>());
      buffers.Finish();
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
  using Types =
      std::conditional_t<kOp == BinaryOp::kDiv, FloatTypesWith16Bit, NumericTypesWith16Bit>;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef(std::string(ElementwiseOpType(kOp)) + "_grad", device_type)
        .TypeConstraint("X", Types::DataTypes())
        .ForwardsInput(kOp == BinaryOp::kAdd ? "Out@GRAD" : "");
  }

  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ElementwiseGradArgs a,
                     prologue::GetElementwiseGradArgs(*ctx, axis_, kOp == BinaryOp::kDiv));
    if constexpr (kOp == BinaryOp::kAdd) {
      ASSIGN_OR_RETURN(const bool forwarded, prologue::ForwardAddGradients(ctx, a));
      if (forwarded) return absl::OkStatus();
    }
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      if constexpr (kOp == BinaryOp::kAdd || kOp == BinaryOp::kSub) {
        if (prologue::GradientsUnbroadcast(*ctx, a)) return CopyUnbroadcast<T>(ctx, a);
      }
      ComputeBuffers<T, Policy> buffers;
      const Shape& os = a.shapes.out;
      const int64_t n = os.num_elements();
      const C* g = buffers.In(a.dout);
      // The gradient of input `in` (aligned to Out as `aligned`) into output
      // `arg`: its unreduced form over Out's shape, written by pre(buffer),
      // summed over the broadcast dims. The sum is skipped when nothing is
      // broadcast (then the shapes hold the same elements in the same order).
      auto grad = [&](const char* arg, const Tensor& in, const Shape& aligned,
                      auto&& pre) -> absl::Status {
        if (ctx->OutputVar(arg) == nullptr) return absl::OkStatus();
        ASSIGN_OR_RETURN(Tensor * d, ctx->AllocateOutput(arg, in.dtype(), in.shape()));
        C* dd = buffers.Out(d);
        if (in.NumElements() == n) {
          pre(dd);
        } else {
          std::vector<C> full(n);
          pre(full.data());
          SumToShape<C, Policy>(full.data(), os, dd, aligned);
        }
        return absl::OkStatus();
      };
      // buf = G <op> (the other operand broadcast), or G itself.
      auto times = [&](const C* other, const Shape& other_aligned, auto fn) {
        return [&, other, other_aligned, fn](C* buf) {
          BroadcastBinary<C, Policy>(BroadcastLayout(os, {os, other_aligned}), g, other, buf, fn);
        };
      };
      // (Unbroadcast adds and subs took CopyUnbroadcast above: GradientsUnbroadcast.)
      auto copy = [&](C* buf) { Map<C, Policy>(g, buf, n, [](C v) { return v; }); };
      if constexpr (kOp == BinaryOp::kAdd) {
        RETURN_IF_ERROR(grad("X@GRAD", *a.x, a.x->shape(), copy));
        RETURN_IF_ERROR(grad("Y@GRAD", *a.y, a.shapes.y_aligned, copy));
      } else if constexpr (kOp == BinaryOp::kSub) {
        RETURN_IF_ERROR(grad("X@GRAD", *a.x, a.x->shape(), copy));
        RETURN_IF_ERROR(grad("Y@GRAD", *a.y, a.shapes.y_aligned, [&](C* buf) {
          Map<C, Policy>(g, buf, n, [](C v) { return Binary<BinaryOp::kSub>()(C(0), v); });
        }));
      } else if constexpr (kOp == BinaryOp::kMul) {
        const C* xd = buffers.In(a.x);
        const C* yd = buffers.In(a.y);
        RETURN_IF_ERROR(grad("X@GRAD", *a.x, a.x->shape(),
                             times(yd, a.shapes.y_aligned, Binary<BinaryOp::kMul>())));
        RETURN_IF_ERROR(grad("Y@GRAD", *a.y, a.shapes.y_aligned,
                             times(xd, a.x->shape(), Binary<BinaryOp::kMul>())));
      } else {
        const C* yd = buffers.In(a.y);
        const C* out = buffers.In(a.out);
        RETURN_IF_ERROR(grad("X@GRAD", *a.x, a.x->shape(),
                             times(yd, a.shapes.y_aligned, Binary<BinaryOp::kDiv>())));
        RETURN_IF_ERROR(grad("Y@GRAD", *a.y, a.shapes.y_aligned, [&](C* buf) {
          Map2<C, Policy>(g, out, buf, n, Binary<BinaryOp::kMul>());
          BroadcastBinary<C, Policy>(BroadcastLayout(os, {os, a.shapes.y_aligned}), buf, yd, buf,
                                     [](C p, C q) { return -p / q; });
        }));
      }
      buffers.Finish();
      return absl::OkStatus();
    });
  }

  // An unbroadcast add's or sub's gradients straight from Out@GRAD, in T:
  // copies and (a sub's Y@GRAD) 0 - v computed in the compute type as the
  // general path computes it (for 16-bit types in float, rounded back:
  // exact), so the same bits without the 16-bit types' float32 buffers.
  template <typename T>
  static absl::Status CopyUnbroadcast(KernelContext* ctx, const prologue::ElementwiseGradArgs& a) {
    using C = ComputeTypeOf<T>;
    const T* g = a.dout->data<T>();
    const int64_t n = a.shapes.out.num_elements();
    for (const bool is_y : {false, true}) {
      const char* arg = is_y ? "Y@GRAD" : "X@GRAD";
      const Tensor* in = is_y ? a.y : a.x;
      if (ctx->OutputVar(arg) == nullptr) continue;
      ASSIGN_OR_RETURN(Tensor * d, ctx->AllocateOutput(arg, in->dtype(), in->shape()));
      if (kOp == BinaryOp::kSub && is_y) {
        Map<T, Policy>(g, d->data<T>(), n, [](T v) {
          return ConvertValue<T>(Binary<BinaryOp::kSub>()(C(0), static_cast<C>(v)));
        });
      } else {
        Map<T, Policy>(g, d->data<T>(), n, [](T v) { return v; });
      }
    }
    return absl::OkStatus();
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
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("matmul", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MatmulArgs a, prologue::GetMatmulArgs(*ctx, attrs_, false));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", a.x->dtype(), a.d.out));
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      ComputeBuffers<T, Policy> buffers;
      const GemmArgs<C> g = math_kernels_internal::MakeGemm<C>(
          attrs_.tx, buffers.In(a.x), a.x->shape().dims().back(), attrs_.ty, buffers.In(a.y),
          a.y->shape().dims().back(), buffers.Out(out), a.d.m, a.d.n, a.d.k, attrs_.alpha);
      RETURN_IF_ERROR(WithOpName(
          *ctx, BatchedGemm<C, Policy>(g, a.d.batch, a.d.x_batched ? a.d.m * a.d.k : 0,
                                       a.d.y_batched ? a.d.k * a.d.n : 0, a.d.m * a.d.n)));
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  prologue::MatmulAttrs attrs_;
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
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("matmul_grad", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MatmulArgs a, prologue::GetMatmulArgs(*ctx, attrs_, true));
    const bool tx = attrs_.tx, ty = attrs_.ty;
    const double alpha = attrs_.alpha;
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      using math_kernels_internal::MakeGemm;
      ComputeBuffers<T, Policy> buffers;
      const int64_t m = a.d.m, n = a.d.n, k = a.d.k;
      const int64_t ldx = a.x->shape().dims().back(), ldy = a.y->shape().dims().back();
      const C* xd = buffers.In(a.x);
      const C* yd = buffers.In(a.y);
      const C* g = buffers.In(a.dout);
      // Batch strides: 0 for a side shared by the batch.
      const int64_t sx = a.d.x_batched ? m * k : 0, sy = a.d.y_batched ? k * n : 0;
      const int64_t sg = m * n;
      if (ctx->OutputVar("X@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", a.x->dtype(), a.x->shape()));
        C* c = buffers.Out(dx);
        const absl::Status s =
            tx ? BatchedGemm<C, Policy>(  // [k, m] = op(Y) * G^T
                     MakeGemm<C>(ty, yd, ldy, true, g, n, c, k, m, n, alpha), a.d.batch, sy, sg, sx)
               : BatchedGemm<C, Policy>(  // [m, k] = G * op(Y)^T
                     MakeGemm<C>(false, g, n, !ty, yd, ldy, c, m, k, n, alpha), a.d.batch, sg, sy,
                     sx);
        RETURN_IF_ERROR(WithOpName(*ctx, s));
      }
      if (ctx->OutputVar("Y@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dy, ctx->AllocateOutput("Y@GRAD", a.y->dtype(), a.y->shape()));
        C* c = buffers.Out(dy);
        const absl::Status s =
            ty ? BatchedGemm<C, Policy>(  // [n, k] = G^T * op(X)
                     MakeGemm<C>(true, g, n, tx, xd, ldx, c, n, k, m, alpha), a.d.batch, sg, sx, sy)
               : BatchedGemm<C, Policy>(  // [k, n] = op(X)^T * G
                     MakeGemm<C>(!tx, xd, ldx, false, g, n, c, k, n, m, alpha), a.d.batch, sx, sg,
                     sy);
        RETURN_IF_ERROR(WithOpName(*ctx, s));
      }
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  prologue::MatmulAttrs attrs_;
};

// Out = scale * X + bias if attr bias_after_scale, else scale * (X + bias).
// float32 / float64 compute in their own type; int32 / int64 compute in
// double and convert back with static_cast (truncation toward zero).
template <typename Policy>
class ScaleKernel final : public OpKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("scale", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Scale<T, Policy>(x->data<T>(), out->data<T>(), x->NumElements(), attrs_.scale, attrs_.bias,
                       attrs_.bias_after_scale);
      return absl::OkStatus();
    });
  }

 private:
  prologue::ScaleAttrs attrs_;
};

// Out = X converted to attr out_dtype, any of the seven dtypes to any:
// numbers static_cast (float to int truncates toward zero), to bool is
// X != 0, from bool is 0 / 1; to bfloat16 / float16 rounds once to nearest
// even as IEEE 754 says (overflow +-inf, NaN stays NaN: float16.h); the
// same dtype copies.
template <typename Policy>
class CastKernel final : public OpKernel {
 public:
  using Types = AllTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("cast", device_type)
        .TypeConstraint("X", Types::DataTypes())
        .TypeConstraint("out_dtype", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "out_dtype", &out_dtype_);
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

// Out = f(X) for the activations relu, sigmoid, tanh and gelu (activation.h:
// sigmoid never overflows exp; gelu's attr approximate picks its tanh form);
// float32 / float64, Out has X's shape.
// Calls launch(Functor<kAct>()), or for gelu the functor of `act` (its
// exact or tanh form): the other kernels compile one functor only.
template <template <Activation> class Functor, Activation kAct, typename Launch>
void WithKernelActivationOf(Activation act, Launch&& launch) {
  if constexpr (kAct == Activation::kGelu) {
    if (act == Activation::kGeluTanh) return launch(Functor<Activation::kGeluTanh>());
  }
  launch(Functor<kAct>());
}

template <typename Policy, Activation kAct>
class ActivationKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef(ActivationOpType(kAct), device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(act_, ActivationOf(op, kAct));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      ComputeBuffers<T, Policy> buffers;
      const C* in = buffers.In(x);
      C* result = buffers.Out(out);
      WithKernelActivationOf<Activate, kAct>(
          act_, [&](auto f) { Map<C, Policy>(in, result, x->NumElements(), f); });
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  Activation act_ = kAct;
};

// X@GRAD of an activation from Out@GRAD and the forward tensor its gradient
// reads (same dtype and shape): relu Out@GRAD where Out > 0, sigmoid
// Out@GRAD * Out * (1 - Out), tanh Out@GRAD * (1 - Out^2), gelu Out@GRAD *
// gelu'(X) (activation.h).
template <typename Policy, Activation kAct>
class ActivationGradKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef(std::string(ActivationOpType(kAct)) + "_grad", device_type)
        .TypeConstraint(GradForwardArg(kAct), Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(act_, ActivationOf(op, kAct));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    constexpr const char* kFwd = GradForwardArg(kAct);
    ASSIGN_OR_RETURN(const prologue::ActivationGradArgs a,
                     prologue::GetActivationGradArgs(ctx, kFwd));
    return DispatchType(Types(), a.fwd->dtype(), *ctx, kFwd, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      ComputeBuffers<T, Policy> buffers;
      const C* fwd = buffers.In(a.fwd);
      const C* dout = buffers.In(a.dout);
      C* dx = buffers.Out(a.dx);
      WithKernelActivationOf<ActivationGrad, kAct>(
          act_, [&](auto f) { Map2<C, Policy>(fwd, dout, dx, a.fwd->NumElements(), f); });
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  Activation act_ = kAct;
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
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef(kMean ? "reduce_mean" : "reduce_sum", device_type)
        .TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const ReduceDims r, prologue::GetReduceDims(*ctx, x->shape(), attrs_, kMean));
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
  prologue::ReduceAttrs attrs_;
};

// X@GRAD of reduce_sum / reduce_mean (the forward's attrs): Out@GRAD
// (shaped like the forward Out, X's dtype) broadcast back over the reduced
// dims, divided by the elements per mean for reduce_mean.
template <typename Policy, bool kMean>
class ReduceGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef(kMean ? "reduce_mean_grad" : "reduce_sum_grad", device_type)
        .TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ReduceGradArgs a,
                     prologue::GetReduceGradArgs(ctx, attrs_, kMean));
    if (a.dx->NumElements() == 0) return absl::OkStatus();
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T count = static_cast<T>(a.r.count);
      BroadcastUnary<T, Policy>(BroadcastLayout(a.x->shape(), {a.r.kept}), a.dout->data<T>(),
                                a.dx->data<T>(), [count](T v) { return kMean ? v / count : v; });
      return absl::OkStatus();
    });
  }

 private:
  prologue::ReduceAttrs attrs_;
};

// Out = X * Y as matrices (Paddle's mul): X's first attr x_num_col_dims
// dims form the rows and the rest the columns, Y likewise with
// y_num_col_dims (FlatMatmulShape); Out is X.dims[:x_num_col_dims] +
// Y.dims[y_num_col_dims:]. float32 on the cpu goes through the policy's
// GEMM (oneDNN sgemm). Inner dim 0 gives zeros.
template <typename Policy>
class MulKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("mul", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return cols_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MulArgs a, prologue::GetMulArgs(ctx, cols_));
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      ComputeBuffers<T, Policy> buffers;
      RETURN_IF_ERROR(WithOpName(
          *ctx, FlatMatmul<ComputeTypeOf<T>, Policy>(buffers.In(a.x), buffers.In(a.y), nullptr,
                                                     a.d.m, a.d.k, a.d.n, buffers.Out(a.out))));
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  prologue::NumColDims cols_;
};

// X@GRAD = Out@GRAD * Y^T and Y@GRAD = X^T * Out@GRAD as matrices, shaped
// like X and Y (each optional: only bound outputs are computed), with the
// forward's attrs. Out@GRAD has the forward Out's shape and X's dtype.
template <typename Policy>
class MulGradKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("mul_grad", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return cols_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MulGradArgs a, prologue::GetMulGradArgs(ctx, cols_));
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      ComputeBuffers<T, Policy> buffers;
      RETURN_IF_ERROR(WithOpName(
          *ctx, FlatMatmulGrad<ComputeTypeOf<T>, Policy>(buffers.In(a.x), buffers.In(a.y),
                                                         buffers.In(a.dout), a.d.m, a.d.k, a.d.n,
                                                         buffers.Out(a.dx), buffers.Out(a.dy))));
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  prologue::NumColDims cols_;
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterMathKernels(const std::string& device_type) {
  RegisterByContract<
      FillConstantKernel<Policy>,  //
      ElementwiseKernel<Policy, BinaryOp::kAdd>, ElementwiseGradKernel<Policy, BinaryOp::kAdd>,
      ElementwiseKernel<Policy, BinaryOp::kSub>, ElementwiseGradKernel<Policy, BinaryOp::kSub>,
      ElementwiseKernel<Policy, BinaryOp::kMul>, ElementwiseGradKernel<Policy, BinaryOp::kMul>,
      ElementwiseKernel<Policy, BinaryOp::kDiv>, ElementwiseGradKernel<Policy, BinaryOp::kDiv>,  //
      MatmulKernel<Policy>, MatmulGradKernel<Policy>,                                            //
      ScaleKernel<Policy>, CastKernel<Policy>, ActivationKernel<Policy, Activation::kRelu>,
      ActivationGradKernel<Policy, Activation::kRelu>,
      ActivationKernel<Policy, Activation::kSigmoid>,
      ActivationGradKernel<Policy, Activation::kSigmoid>,
      ActivationKernel<Policy, Activation::kTanh>, ActivationGradKernel<Policy, Activation::kTanh>,
      ActivationKernel<Policy, Activation::kGelu>, ActivationGradKernel<Policy, Activation::kGelu>,
      ReduceKernel<Policy, /*kMean=*/false>, ReduceGradKernel<Policy, false>,
      ReduceKernel<Policy, /*kMean=*/true>, ReduceGradKernel<Policy, true>, MulKernel<Policy>,
      MulGradKernel<Policy>>(device_type);
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_MATH_KERNELS_H_
