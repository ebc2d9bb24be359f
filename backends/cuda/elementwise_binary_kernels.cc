// gpu kernels of elementwise_add, _sub, _mul, _div (numpy broadcasting, Y
// aligned by `axis`) and their gradients, with the host kernels'
// registration lines and, through the shared prologues
// (ops/math/prologues.h), their validation and messages.
//
// Forward: one kernel picked by PlanAdd (same shape, a repeated row, or
// strided). Integer division first looks for a zero in Y with a device flag
// (device_flag.h): one stream synchronisation, and InvalidArgument naming Y
// and the zero's position, as on the host.
//
// Gradients: the unreduced gradient over Out's shape (Out@GRAD, or its
// product or quotient with the other operand broadcast) is summed down to
// the input's shape (PlanReduceTo, LaunchReduceSum) through a scratch
// tensor, or written directly when the input was not broadcast. sub's
// Y@GRAD and div's Y@GRAD are negated after the sum (the sum of negated
// values is the negated sum, bit for bit).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/broadcast_plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_flag.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/math_launchers.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/prologues.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

using prologue::BinaryShapes;

// InvalidArgument unless no element of integer Y is zero (host wording).
template <typename T>
absl::Status CheckNoZeroDivisor(KernelContext* ctx, const Tensor& y) {
  ASSIGN_OR_RETURN(FirstBadPosition flag, FirstBadPosition::Create(ctx));
  CUDA_RETURN_IF_ERROR(
      LaunchFindZero<T>(y.data<T>(), y.NumElements(), flag.get(), CudaStreamOf(ctx->stream())));
  ASSIGN_OR_RETURN(const std::optional<int64_t> zero, flag.Read(ctx));
  if (!zero.has_value()) return absl::OkStatus();
  return ctx->InvalidArgument(absl::StrCat("integer division by zero: Y '", ctx->InputName("Y"),
                                           "' ", y.shape().ToString(), " is 0 at position ",
                                           *zero));
}

template <BinaryOp kOp>
class ElementwiseKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const BinaryShapes shapes, prologue::GetBinaryShapes(*ctx, *x, *y, axis_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), shapes.out));
    if (out->NumElements() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(const AddPlan plan,
                     PlanAdd(ctx->op().type, x->shape(), shapes.y_aligned, shapes.out));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchNumericWith16Bit(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if constexpr (kOp == BinaryOp::kDiv && std::is_integral_v<T>) {
        RETURN_IF_ERROR(CheckNoZeroDivisor<T>(ctx, *y));
      }
      CUDA_RETURN_IF_ERROR(
          LaunchBinary<T>(kOp, x->data<T>(), y->data<T>(), out->data<T>(), plan, stream));
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
};

// X@GRAD and Y@GRAD (each only when bound) from Out@GRAD (G):
//   add  G, G            sub  G, -G
//   mul  G * Y, G * X    div  G / Y, -(G * Out) / Y (reads the forward Out)
// each summed over the dims its input was broadcast along.
template <BinaryOp kOp>
class ElementwiseGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ElementwiseGradArgs a,
                     prologue::GetElementwiseGradArgs(*ctx, axis_, kOp == BinaryOp::kDiv));
    if constexpr (kOp == BinaryOp::kAdd) {
      ASSIGN_OR_RETURN(const bool forwarded, prologue::ForwardAddGradients(ctx, a));
      if (forwarded) return absl::OkStatus();
    }
    Targets targets;
    if (ctx->OutputVar("X@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(targets.dx, ctx->AllocateOutput("X@GRAD", a.x->dtype(), a.x->shape()));
    }
    if (ctx->OutputVar("Y@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(targets.dy, ctx->AllocateOutput("Y@GRAD", a.y->dtype(), a.y->shape()));
    }
    if (IsLowPrecisionFloat(a.x->dtype())) {
      if constexpr (kOp == BinaryOp::kAdd || kOp == BinaryOp::kSub) {
        if (Unbroadcast(a, targets)) return Copy16Bit(ctx, a, targets);
      }
      return ComputeWidened(ctx, a, targets);
    }
    return DispatchNumeric(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      return Grads<T>(ctx, a, targets);
    });
  }

 private:
  // Where the gradients go (null: not bound).
  struct Targets {
    Tensor* dx = nullptr;
    Tensor* dy = nullptr;
  };

  // Whether every bound gradient has Out's elements (no sum over broadcast
  // dims): an add's or a sub's are then G or -G.
  static bool Unbroadcast(const prologue::ElementwiseGradArgs& a, const Targets& targets) {
    const Shape& os = a.shapes.out;
    return (targets.dx == nullptr || a.x->shape() == os) &&
           (targets.dy == nullptr || a.shapes.y_aligned == os);
  }

  // An unbroadcast 16-bit add's or sub's gradients written from G in 16
  // bits: copies (both of an add's in one pass) and a sign flip, the bits
  // the widened path below gives (widening, the flip and narrowing an
  // exact value are exact) without its float32 copies (a residual add of
  // GPT moved about seven times the bytes).
  absl::Status Copy16Bit(KernelContext* ctx, const prologue::ElementwiseGradArgs& a,
                         const Targets& targets) {
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    const int64_t n = a.shapes.out.num_elements();
    return Dispatch16BitFloat(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* g = a.dout->data<T>();
      Tensor *dx = targets.dx, *dy = targets.dy;
      if (kOp == BinaryOp::kAdd && dx != nullptr && dy != nullptr) {
        CUDA_RETURN_IF_ERROR(LaunchCopyToTwo<T>(g, dx->data<T>(), dy->data<T>(), n, stream));
        return absl::OkStatus();
      }
      if (dx != nullptr) {
        CUDA_RETURN_IF_ERROR(
            cudaMemcpyAsync(dx->data<T>(), g, dx->NumBytes(), cudaMemcpyDeviceToDevice, stream));
      }
      if (dy != nullptr && kOp == BinaryOp::kSub) {
        CUDA_RETURN_IF_ERROR(LaunchNegate<T>(g, dy->data<T>(), n, stream));
      } else if (dy != nullptr) {
        CUDA_RETURN_IF_ERROR(
            cudaMemcpyAsync(dy->data<T>(), g, dy->NumBytes(), cudaMemcpyDeviceToDevice, stream));
      }
      return absl::OkStatus();
    });
  }

  // A 16-bit gradient as the host computes it: float32 copies of the
  // inputs, the float32 gradients, each rounded once into its output.
  absl::Status ComputeWidened(KernelContext* ctx, const prologue::ElementwiseGradArgs& a,
                              const Targets& targets) {
    std::deque<Tensor> keep;  // the float32 copies, alive until Compute returns
    auto widen = [&](const Tensor* t) -> absl::StatusOr<const Tensor*> {
      if (t == nullptr) return t;
      ASSIGN_OR_RETURN(Tensor wide, WidenedCopy(ctx, *t));
      keep.push_back(std::move(wide));
      return &keep.back();
    };
    prologue::ElementwiseGradArgs wide = a;
    ASSIGN_OR_RETURN(wide.x, widen(a.x));
    ASSIGN_OR_RETURN(wide.y, widen(a.y));
    ASSIGN_OR_RETURN(wide.dout, widen(a.dout));
    ASSIGN_OR_RETURN(wide.out, widen(a.out));
    Targets wide_targets;
    const std::pair<Tensor*, Tensor**> grads[] = {{targets.dx, &wide_targets.dx},
                                                  {targets.dy, &wide_targets.dy}};
    for (const auto& [grad, wide_grad] : grads) {
      if (grad == nullptr) continue;
      ASSIGN_OR_RETURN(Tensor scratch, AllocateScratch(ctx, DataType::kFloat32, grad->shape(),
                                                       "a float32 gradient"));
      keep.push_back(std::move(scratch));
      *wide_grad = &keep.back();
    }
    RETURN_IF_ERROR(Grads<float>(ctx, wide, wide_targets));
    for (const auto& [grad, wide_grad] : grads) {
      if (grad != nullptr) RETURN_IF_ERROR(NarrowInto(ctx, **wide_grad, grad));
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::Status Grads(KernelContext* ctx, const prologue::ElementwiseGradArgs& a,
                     const Targets& targets) {
    const std::string& op = ctx->op().type;
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    const Shape& os = a.shapes.out;
    const int64_t n = os.num_elements();
    const T* g = a.dout->data<T>();
    // buf = G <op> `other` broadcast (aligned to Out as `other_aligned`).
    auto combine = [&](BinaryOp with, const T* first, const Tensor& other,
                       const Shape& other_aligned, T* buf) -> absl::Status {
      ASSIGN_OR_RETURN(const AddPlan plan, PlanAdd(op, os, other_aligned, os));
      CUDA_RETURN_IF_ERROR(LaunchBinary<T>(with, first, other.data<T>(), buf, plan, stream));
      return absl::OkStatus();
    };
    // The gradient of `in` (aligned to Out as `aligned`) into output
    // `arg`: `pre(buf)` writes its unreduced form over Out's shape (null
    // pre: it is G itself), which is summed over the broadcast dims, then
    // negated when `negate`.
    auto grad = [&](Tensor* d, const Tensor& in, const Shape& aligned, auto&& pre,
                    bool negate) -> absl::Status {
      if (d == nullptr) return absl::OkStatus();
      const int64_t count = d->NumElements();
      if (count == 0) return absl::OkStatus();
      ASSIGN_OR_RETURN(const ReduceGeometry sum, PlanReduceTo(op, os, aligned));
      constexpr bool kIdentity = std::is_same_v<std::decay_t<decltype(pre)>, std::nullptr_t>;
      if (sum.reduce_rank == 0) {  // not broadcast: same elements in the same order
        if constexpr (kIdentity) {
          if (negate) {
            CUDA_RETURN_IF_ERROR(LaunchNegate<T>(g, d->data<T>(), count, stream));
            return absl::OkStatus();
          }
          CUDA_RETURN_IF_ERROR(
              cudaMemcpyAsync(d->data<T>(), g, d->NumBytes(), cudaMemcpyDeviceToDevice, stream));
          return absl::OkStatus();
        } else {
          RETURN_IF_ERROR(pre(d->data<T>()));
        }
      } else {
        const T* full = g;
        Tensor temp;
        if constexpr (!kIdentity) {
          ASSIGN_OR_RETURN(temp, AllocateScratch(ctx, d->dtype(), os, "the unreduced gradient"));
          RETURN_IF_ERROR(pre(temp.data<T>()));
          full = temp.data<T>();
        }
        CUDA_RETURN_IF_ERROR(LaunchReduceSum<T>(full, d->data<T>(), sum, stream));
      }
      if (negate) CUDA_RETURN_IF_ERROR(LaunchNegate<T>(d->data<T>(), d->data<T>(), count, stream));
      return absl::OkStatus();
    };
    const Shape& ya = a.shapes.y_aligned;
    if constexpr (kOp == BinaryOp::kAdd) {  // both gradients G itself: one pass writes the two
      Tensor *dx = targets.dx, *dy = targets.dy;
      if (dx != nullptr && dy != nullptr && a.x->shape() == os && ya == os) {
        CUDA_RETURN_IF_ERROR(LaunchCopyToTwo<T>(g, dx->data<T>(), dy->data<T>(), n, stream));
        return absl::OkStatus();
      }
    }
    if constexpr (kOp == BinaryOp::kAdd || kOp == BinaryOp::kSub) {
      RETURN_IF_ERROR(grad(targets.dx, *a.x, a.x->shape(), nullptr, false));
      return grad(targets.dy, *a.y, ya, nullptr, kOp == BinaryOp::kSub);
    } else if constexpr (kOp == BinaryOp::kMul) {
      RETURN_IF_ERROR(grad(
          targets.dx, *a.x, a.x->shape(),
          [&](T* buf) { return combine(BinaryOp::kMul, g, *a.y, ya, buf); }, false));
      return grad(
          targets.dy, *a.y, ya,
          [&](T* buf) { return combine(BinaryOp::kMul, g, *a.x, a.x->shape(), buf); }, false);
    } else {
      RETURN_IF_ERROR(grad(
          targets.dx, *a.x, a.x->shape(),
          [&](T* buf) { return combine(BinaryOp::kDiv, g, *a.y, ya, buf); }, false));
      return grad(
          targets.dy, *a.y, ya,
          [&](T* buf) -> absl::Status {
            CUDA_RETURN_IF_ERROR(
                LaunchBinarySame<T>(BinaryOp::kMul, g, a.out->data<T>(), buf, n, stream));
            return combine(BinaryOp::kDiv, buf, *a.y, ya, buf);
          },
          true);
    }
  }

  int64_t axis_ = -1;
};

// elementwise_div's zero-divisor flag (device_flag.h), for an integer Y.
int64_t DivScratch(const OpDesc&, const ArgMetas& in, const ArgMetas&) {
  const TensorMeta* y = FirstMeta(in, "Y");
  const bool integer =
      y != nullptr && (y->dtype == DataType::kInt32 || y->dtype == DataType::kInt64);
  return integer ? sizeof(int64_t) : 0;
}

// A 16-bit gradient's float32 copies (ComputeWidened): of its inputs and
// of its gradients.
int64_t WidenedGradScratch(const OpDesc&, const ArgMetas& in, const ArgMetas& out) {
  const TensorMeta* dout = FirstMeta(in, "Out@GRAD");
  if (dout == nullptr || !IsLowPrecisionFloat(dout->dtype)) return 0;
  int64_t elements = 0;
  for (const char* arg : {"X", "Y", "Out", "Out@GRAD"}) {
    if (const TensorMeta* m = FirstMeta(in, arg)) elements += m->shape.num_elements();
  }
  for (const char* arg : {"X@GRAD", "Y@GRAD"}) {
    if (const TensorMeta* m = FirstMeta(out, arg)) elements += m->shape.num_elements();
  }
  return elements * static_cast<int64_t>(sizeof(float));
}

// The gradients of mul and div: an input broadcast to Out's shape gets its
// gradient over Out's shape first (the unreduced gradient, float32 for the
// 16-bit types), one at a time; plus the 16-bit types' float32 copies.
int64_t ProductGradScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas& out) {
  const TensorMeta* dout = FirstMeta(in, "Out@GRAD");
  if (dout == nullptr) return 0;
  const int64_t n = dout->shape.num_elements();
  bool broadcast = false;
  for (const char* arg : {"X", "Y"}) {
    const TensorMeta* x = FirstMeta(in, arg);
    broadcast |= FirstMeta(out, absl::StrCat(arg, "@GRAD")) != nullptr && x != nullptr &&
                 x->shape.num_elements() != n && x->shape.num_elements() > 0;
  }
  const DataType unreduced = IsLowPrecisionFloat(dout->dtype) ? DataType::kFloat32 : dout->dtype;
  return (broadcast ? n * static_cast<int64_t>(SizeOf(unreduced)) : 0) +
         WidenedGradScratch(op, in, out);
}

// The host kernels' type constraints: every op and gradient takes the
// numeric types and the 16-bit ones, except elementwise_div_grad (the
// floating types only). An add's gradient may forward Out@GRAD.
#define TANDEM_ELEMENTWISE(name, op, grad_types, scratch, grad_scratch)                    \
  REGISTER_KERNEL(                                                                         \
      KernelDef(name, "gpu").TypeConstraint("X", kNumericTypesWith16Bit).Scratch(scratch), \
      ElementwiseKernel<op>);                                                              \
  REGISTER_KERNEL(KernelDef(name "_grad", "gpu")                                           \
                      .TypeConstraint("X", grad_types)                                     \
                      .Scratch(grad_scratch)                                               \
                      .ForwardsInput(op == BinaryOp::kAdd ? "Out@GRAD" : ""),              \
                  ElementwiseGradKernel<op>)
TANDEM_ELEMENTWISE("elementwise_add", BinaryOp::kAdd, kNumericTypesWith16Bit, nullptr,
                   WidenedGradScratch);
TANDEM_ELEMENTWISE("elementwise_sub", BinaryOp::kSub, kNumericTypesWith16Bit, nullptr,
                   WidenedGradScratch);
TANDEM_ELEMENTWISE("elementwise_mul", BinaryOp::kMul, kNumericTypesWith16Bit, nullptr,
                   ProductGradScratch);
TANDEM_ELEMENTWISE("elementwise_div", BinaryOp::kDiv, kFloatTypesWith16Bit, DivScratch,
                   ProductGradScratch);
#undef TANDEM_ELEMENTWISE

}  // namespace
}  // namespace cuda
}  // namespace tandem
