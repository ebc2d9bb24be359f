// The kernels of the loss ops (ops/loss) for every backend whose memory the
// host can address: square_error_cost(_grad), mean(_grad) and
// softmax_with_cross_entropy(_grad). Each is written once, templated on an
// execution policy (serial_policy.h). A backend registers them under its
// device type with one line:
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h  //
//   host_kernels.h
//
// Each kernel class's static Contract is its registration line and RegisterLossKernels lists them
// (all arguments in device memory):
//   square_error_cost(_grad), mean(_grad)    X: float32, float64
//   softmax_with_cross_entropy               Logits: float32, float64
//   softmax_with_cross_entropy_grad          Softmax: float32, float64
//                                            (Label: int64)
//   l2_normalize_square_error_mean(_grad)    X: float32, float64
// Kernels validate their inputs with ops/loss/prologues.h, as the gpu kernels do
// (InvalidArgument naming the op and both shapes, the empty input or the bad
// label),
// compute synchronously through the policy and never copy between places.
// Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_LOSS_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_LOSS_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "backends/common/axis_lines.h"
#include "backends/common/elementwise.h"
#include "backends/common/l2_normalize.h"
#include "backends/common/softmax.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/tensor/tensor.h"
#include "ops/loss/prologues.h"
#include "ops/loss/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {

// Out = (X - Y)^2 element-wise; X and Y have the same dtype and shape
// (0-d and empty included).
template <typename Policy>
class SquareErrorCostKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("square_error_cost", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::SquareErrorCostArgs a, prologue::GetSquareErrorCostArgs(ctx));
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xd = a.x->data<T>();
      const T* yd = a.y->data<T>();
      T* o = a.out->data<T>();
      Policy::ParallelFor(a.x->NumElements(), kMinElementsPerTask, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const T d = xd[i] - yd[i];
          o[i] = d * d;
        }
      });
      return absl::OkStatus();
    });
  }
};

// X@GRAD = 2 (X - Y) Out@GRAD and Y@GRAD = -2 (X - Y) Out@GRAD, each
// computed only when its output is bound; Out@GRAD has X's dtype and shape.
template <typename Policy>
class SquareErrorCostGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("square_error_cost_grad", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::SquareErrorCostGradArgs a,
                     prologue::GetSquareErrorCostGradArgs(ctx));
    for (const std::pair<Tensor*, double>& out :
         {std::pair<Tensor*, double>{a.dx, 2.0}, std::pair<Tensor*, double>{a.dy, -2.0}}) {
      Tensor* grad = out.first;
      const double sign = out.second;
      if (grad == nullptr) continue;
      RETURN_IF_ERROR(DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* xd = a.x->data<T>();
        const T* yd = a.y->data<T>();
        const T* g = a.dout->data<T>();
        const T s = static_cast<T>(sign);
        T* d = grad->data<T>();
        Policy::ParallelFor(a.x->NumElements(), kMinElementsPerTask,
                            [&](int64_t begin, int64_t end) {
                              for (int64_t i = begin; i < end; ++i)
                                d[i] = s * (xd[i] - yd[i]) * g[i];
                            });
        return absl::OkStatus();
      }));
    }
    return absl::OkStatus();
  }
};

// Out (shape [1]) = the mean of all elements of X, summed in a fixed order
// (float32 in double). An empty X is InvalidArgument "op 'mean': X is empty".
template <typename Policy>
class MeanKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("mean", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MeanArgs a, prologue::GetMeanArgs(ctx));
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t n = a.x->NumElements();
      a.out->data<T>()[0] =
          static_cast<T>(static_cast<double>(Sum<T, Policy>(a.x->data<T>(), n)) / n);
      return absl::OkStatus();
    });
  }
};

// X@GRAD = Out@GRAD[0] / numel(X) everywhere (computed in double);
// Out@GRAD is [1] of X's dtype.
template <typename Policy>
class MeanGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("mean_grad", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MeanGradArgs a, prologue::GetMeanGradArgs(ctx));
    const Tensor* x = a.x;
    const Tensor* dout = a.dout;
    Tensor* dx = a.dx;
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t n = x->NumElements();
      Fill<T, Policy>(static_cast<T>(static_cast<double>(dout->data<T>()[0]) / n), dx->data<T>(),
                      n);
      return absl::OkStatus();
    });
  }
};

namespace loss_kernels_internal {

// InvalidArgument (prologue::BadLabelError) unless every label of `b` is in
// [0, C) or equal to `ignore_index`; reads the labels, so host memory only.
inline absl::Status CheckLabels(const KernelContext& ctx, const prologue::ClassBatch& b,
                                std::optional<int64_t> ignore_index) {
  const int64_t* labels = b.label->data<int64_t>();
  const int64_t bad = FirstBadLabel(labels, b.rows.rows, b.rows.classes, ignore_index);
  if (bad < 0) return absl::OkStatus();
  return prologue::BadLabelError(ctx, labels[bad], bad, b.rows.classes, ignore_index);
}

}  // namespace loss_kernels_internal

// Softmax = softmax of Logits [..., C] over the last dim and Loss [..., 1]
// = log(sum(exp(Logits - max))) + max - Logits[label] per row (softmax.h),
// with int64 Label [..., 1] or [...]; rows whose label is attr
// ignore_index get loss 0; other labels must be in [0, C). Exps and sums in
// double for float32. attr soft_label=true is Unimplemented (at Init).
template <typename Policy>
class SoftmaxWithCrossEntropyKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("softmax_with_cross_entropy", device_type)
        .TypeConstraint("Logits", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ClassBatch b, prologue::GetClassBatch(*ctx, "Logits"));
    RETURN_IF_ERROR(loss_kernels_internal::CheckLabels(*ctx, b, attrs_.ignore_index));
    ASSIGN_OR_RETURN(const prologue::CrossEntropyOutputs o,
                     prologue::AllocateCrossEntropyOutputs(ctx, b));
    return DispatchType(Types(), b.scores->dtype(), *ctx, "Logits", [&](auto tag) {
      using T = typename decltype(tag)::type;
      SoftmaxCrossEntropy<T, Policy>(b.scores->data<T>(), b.label->data<int64_t>(), b.rows.rows,
                                     b.rows.classes, attrs_.ignore_index, o.softmax->data<T>(),
                                     o.loss->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  prologue::CrossEntropyAttrs attrs_;
};

// Logits@GRAD = (Softmax - onehot(Label)) * Loss@GRAD per row, zero for
// rows whose label is ignore_index; Label is checked as in the forward op
// and Loss@GRAD is [..., 1] of Softmax's dtype.
template <typename Policy>
class SoftmaxWithCrossEntropyGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("softmax_with_cross_entropy_grad", device_type)
        .TypeConstraint("Softmax", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ClassBatch b, prologue::GetClassBatch(*ctx, "Softmax"));
    RETURN_IF_ERROR(loss_kernels_internal::CheckLabels(*ctx, b, attrs_.ignore_index));
    ASSIGN_OR_RETURN(const prologue::CrossEntropyGradArgs g,
                     prologue::GetCrossEntropyGradArgs(ctx, b));
    return DispatchType(Types(), b.scores->dtype(), *ctx, "Softmax", [&](auto tag) {
      using T = typename decltype(tag)::type;
      SoftmaxCrossEntropyGrad<T, Policy>(b.scores->data<T>(), b.label->data<int64_t>(),
                                         g.dloss->data<T>(), b.rows.rows, b.rows.classes,
                                         attrs_.ignore_index, g.dlogits->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  prologue::CrossEntropyAttrs attrs_;
};

// l2_normalize_square_error_mean: the mean of (X / its line's norm -
// Label)^2 in one pass (l2_normalize.h), Out [1] of X's dtype.
template <typename Policy>
class L2NormalizeSquareErrorMeanKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("l2_normalize_square_error_mean", device_type)
        .TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::L2NormalizeSquareErrorMeanArgs a,
                     prologue::GetL2NormalizeSquareErrorMeanArgs(ctx, attrs_.axis, /*grad=*/false));
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      a.out->data<T>()[0] = static_cast<T>(L2NormalizeSquareErrorMean<T, Policy>(
          a.x->data<T>(), a.label->data<T>(), AxisLines::Around(a.x->shape(), a.axis),
          attrs_.epsilon));
      return absl::OkStatus();
    });
  }

 private:
  prologue::L2NormalizeSquareErrorMeanAttrs attrs_;
};

// Its gradient: X@GRAD and Label@GRAD where bound (l2_normalize.h).
template <typename Policy>
class L2NormalizeSquareErrorMeanGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("l2_normalize_square_error_mean_grad", device_type)
        .TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::L2NormalizeSquareErrorMeanArgs a,
                     prologue::GetL2NormalizeSquareErrorMeanArgs(ctx, attrs_.axis, /*grad=*/true));
    if (a.dx == nullptr && a.dlabel == nullptr) return absl::OkStatus();
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      L2NormalizeSquareErrorMeanGrad<T, Policy>(
          a.x->data<T>(), a.label->data<T>(), AxisLines::Around(a.x->shape(), a.axis),
          attrs_.epsilon, a.dout->data<T>()[0], a.dx == nullptr ? nullptr : a.dx->data<T>(),
          a.dlabel == nullptr ? nullptr : a.dlabel->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  prologue::L2NormalizeSquareErrorMeanAttrs attrs_;
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterLossKernels(const std::string& device_type) {
  RegisterByContract<
      SquareErrorCostKernel<Policy>, SquareErrorCostGradKernel<Policy>, MeanKernel<Policy>,
      MeanGradKernel<Policy>, SoftmaxWithCrossEntropyKernel<Policy>,
      SoftmaxWithCrossEntropyGradKernel<Policy>, L2NormalizeSquareErrorMeanKernel<Policy>,
      L2NormalizeSquareErrorMeanGradKernel<Policy>>(device_type);
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_LOSS_KERNELS_H_
