// gpu kernels of softmax(_grad), softmax_with_cross_entropy(_grad) and
// accuracy (softmax_launchers.h), with the host kernels' registration
// lines and, through the shared prologues (backends/common/
// ops/loss/prologues.h), their validation and messages.
//
// Labels live in device memory: a check kernel reports the first bad label
// and its position in a deferred check (deferred_checks.h), which returns
// the host kernels' InvalidArgument, e.g. "op 'softmax_with_cross_entropy':
// label 7 at position 2 is out of range [0, 5) (ignore_index -100)", at the
// run's end (the stream's next synchronisation, or the pipelined run's end):
// the host never waits for the device in the middle of a step. Rows with
// bad labels are computed as ignored meanwhile.
#include <cuda_runtime_api.h>

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/softmax_launchers.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/loss/prologues.h"
#include "ops/loss/shape_fns.h"
#include "ops/math/prologues.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

// `x` (argument `arg`) as [outer, n, inner] around attr axis (validated).
absl::StatusOr<AxisGeometry> AxisOf(const KernelContext& ctx, absl::string_view arg,
                                    const Tensor& x, int64_t axis_attr) {
  ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ctx.op().type, arg, x.shape(), axis_attr));
  AxisGeometry g;
  for (int d = 0; d < x.shape().rank(); ++d) {
    (d < axis ? g.outer : d == axis ? g.n : g.inner) *= x.shape().dim(d);
  }
  return g;
}

class SoftmaxKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const AxisGeometry g, AxisOf(*ctx, "X", *x, axis_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchSoftmax<T>(x->data<T>(), out->data<T>(), g, stream));
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
};

REGISTER_KERNEL(KernelDef("softmax", "gpu").TypeConstraint("X", kFloatTypes), SoftmaxKernel);

class SoftmaxGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* out, ctx->InputTensor("Out"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    ASSIGN_OR_RETURN(const AxisGeometry g, AxisOf(*ctx, "Out", *out, axis_));
    RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, "Out@GRAD", dout->dtype(), dout->shape(),
                                 out->dtype(), out->shape()));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", out->dtype(), out->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(out->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(
          LaunchSoftmaxGrad<T>(out->data<T>(), dout->data<T>(), dx->data<T>(), g, stream));
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
};

REGISTER_KERNEL(KernelDef("softmax_grad", "gpu").TypeConstraint("Out", kFloatTypes),
                SoftmaxGradKernel);

using prologue::ClassBatch;
using prologue::GetClassBatch;

// Enqueues the check of b's labels (ignore_index: none for accuracy) as a
// deferred check (deferred_checks.h): the host kernels' InvalidArgument for
// the first bad label surfaces at the run's end, so the host does not wait
// for the device in the middle of the step. A bad label's row counts as
// ignored meanwhile (zero loss and gradient, counted wrong by accuracy).
absl::Status CheckLabels(KernelContext* ctx, const ClassBatch& b,
                         std::optional<int64_t> ignore_index) {
  if (b.rows.rows == 0) return absl::OkStatus();  // no label: no slot to arm
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  ASSIGN_OR_RETURN(const CheckSlot check,
                   CudaDeviceOf(ctx->device())
                       ->deferred_checks()
                       ->Arm(stream, ctx->run_id(),
                             [op = ctx->op().type, classes = b.rows.classes, ignore_index](
                                 int64_t label, int64_t position) {
                               return prologue::BadLabelError(op, label, position, classes,
                                                              ignore_index);
                             }));
  CUDA_RETURN_IF_ERROR(LaunchCheckLabels(b.label->data<int64_t>(), b.rows.rows, b.rows.classes,
                                         ignore_index.has_value(), ignore_index.value_or(0), check,
                                         stream));
  return absl::OkStatus();
}

class SoftmaxWithCrossEntropyKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const ClassBatch b, GetClassBatch(*ctx, "Logits"));
    RETURN_IF_ERROR(CheckLabels(ctx, b, attrs_.ignore_index));
    const DataType dtype = b.scores->dtype();
    ASSIGN_OR_RETURN(const prologue::CrossEntropyOutputs o,
                     prologue::AllocateCrossEntropyOutputs(ctx, b));
    Tensor* softmax = o.softmax;
    Tensor* loss = o.loss;
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    if (b.rows.classes == 0) {  // every row ignored (or a bad label)
      if (loss->NumBytes() > 0) {
        CUDA_RETURN_IF_ERROR(cudaMemsetAsync(loss->raw_data(), 0, loss->NumBytes(), stream));
      }
    } else {
      RETURN_IF_ERROR(DispatchFloat(dtype, [&](auto tag) -> absl::Status {
        using T = typename decltype(tag)::type;
        CUDA_RETURN_IF_ERROR(LaunchSoftmaxCrossEntropy<T>(
            b.scores->data<T>(), b.label->data<int64_t>(), b.rows.rows, b.rows.classes,
            attrs_.ignore_index, softmax->data<T>(), loss->data<T>(), stream));
        return absl::OkStatus();
      }));
    }
    return absl::OkStatus();
  }

 private:
  prologue::CrossEntropyAttrs attrs_;
};

REGISTER_KERNEL(
    KernelDef("softmax_with_cross_entropy", "gpu").TypeConstraint("Logits", kFloatTypes),
    SoftmaxWithCrossEntropyKernel);

class SoftmaxWithCrossEntropyGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const ClassBatch b, GetClassBatch(*ctx, "Softmax"));
    RETURN_IF_ERROR(CheckLabels(ctx, b, attrs_.ignore_index));
    absl::StatusOr<prologue::CrossEntropyGradArgs> args = prologue::GetCrossEntropyGradArgs(ctx, b);
    if (!args.ok()) {
      // The host kernel checks the labels first: a bad label (resolved by
      // this synchronisation) is the error to report, not left pending.
      RETURN_IF_ERROR(ctx->device()->SynchronizeStream(ctx->stream()));
      return args.status();
    }
    const prologue::CrossEntropyGradArgs& g = *args;
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(b.scores->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchSoftmaxCrossEntropyGrad<T>(
          b.scores->data<T>(), b.label->data<int64_t>(), g.dloss->data<T>(), b.rows.rows,
          b.rows.classes, attrs_.ignore_index, g.dlogits->data<T>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  prologue::CrossEntropyAttrs attrs_;
};

REGISTER_KERNEL(
    KernelDef("softmax_with_cross_entropy_grad", "gpu").TypeConstraint("Softmax", kFloatTypes),
    SoftmaxWithCrossEntropyGradKernel);

class AccuracyKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const ClassBatch b, GetClassBatch(*ctx, "Out"));
    RETURN_IF_ERROR(CheckLabels(ctx, b, std::nullopt));
    ASSIGN_OR_RETURN(const prologue::AccuracyOutputs o, prologue::AllocateAccuracyOutputs(ctx));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    RETURN_IF_ERROR(DispatchFloat(b.scores->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchAccuracy<T>(
          b.scores->data<T>(), b.label->data<int64_t>(), b.rows.rows, b.rows.classes, attrs_.k,
          o.correct->data<int64_t>(), o.total->data<int64_t>(), o.accuracy->data<float>(), stream));
      return absl::OkStatus();
    }));
    return absl::OkStatus();
  }

 private:
  prologue::AccuracyAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("accuracy", "gpu").TypeConstraint("Out", kFloatTypes), AccuracyKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
