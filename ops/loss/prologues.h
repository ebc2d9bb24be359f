// Kernel prologues of the loss and metric ops (square_error_cost, mean,
// softmax_with_cross_entropy, accuracy and the gradients): the attributes,
// input checks and output shapes that the host kernels (loss_kernels.h,
// metric_kernels.h) and the gpu kernels (backends/cuda) share, so every
// place validates in the same order with the same messages:
//
//   ASSIGN_OR_RETURN(const prologue::ClassBatch b, prologue::GetClassBatch(*ctx, "Logits"));
//   // host: labels read here; gpu: checked on the device, the same error after a read-back
//   if (bad >= 0) return prologue::BadLabelError(*ctx, labels[bad], bad, b.rows.classes, -100);
//   ASSIGN_OR_RETURN(const prologue::CrossEntropyOutputs o,
//                    prologue::AllocateCrossEntropyOutputs(ctx, b));
//
// Errors are InvalidArgument naming the op and the offending argument,
// shape or label (ops/loss/shape_fns.h). Nothing here reads tensor data
// (labels are the kernels' own checks, with BadLabelError's message), so
// every function works on any place. Stateless and thread-safe.
#ifndef TANDEM_OPS_LOSS_PROLOGUES_H_
#define TANDEM_OPS_LOSS_PROLOGUES_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/kernel/kernel_context.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "ops/loss/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace prologue {

// X and Y of square_error_cost (same dtype and shape) with Out allocated.
struct SquareErrorCostArgs {
  const Tensor* x = nullptr;
  const Tensor* y = nullptr;
  Tensor* out = nullptr;
};
absl::StatusOr<SquareErrorCostArgs> GetSquareErrorCostArgs(KernelContext* ctx);

// X, Y and Out@GRAD (X's dtype and shape) of square_error_cost_grad,
// checked; X@GRAD and Y@GRAD allocated when bound (else null).
struct SquareErrorCostGradArgs {
  const Tensor* x = nullptr;
  const Tensor* y = nullptr;
  const Tensor* dout = nullptr;
  Tensor* dx = nullptr;
  Tensor* dy = nullptr;
};
absl::StatusOr<SquareErrorCostGradArgs> GetSquareErrorCostGradArgs(KernelContext* ctx);

// X of mean (non-empty) with Out ([1]) allocated.
struct MeanArgs {
  const Tensor* x = nullptr;
  Tensor* out = nullptr;
};
absl::StatusOr<MeanArgs> GetMeanArgs(KernelContext* ctx);

// X and Label of l2_normalize_square_error_mean(_grad) (same dtype and
// shape, X non-empty, floating) and attr axis normalised against X's rank;
// Out ([1]) allocated, or for the gradient Out@GRAD ([1] of X's dtype)
// checked and X@GRAD / Label@GRAD allocated where bound (else null).
struct L2NormalizeSquareErrorMeanArgs {
  const Tensor* x = nullptr;
  const Tensor* label = nullptr;
  int axis = 0;
  Tensor* out = nullptr;         // forward
  const Tensor* dout = nullptr;  // gradient
  Tensor* dx = nullptr;
  Tensor* dlabel = nullptr;
};
absl::StatusOr<L2NormalizeSquareErrorMeanArgs> GetL2NormalizeSquareErrorMeanArgs(KernelContext* ctx,
                                                                                 int64_t axis,
                                                                                 bool grad);
// The attrs both l2_normalize_square_error_mean kernels read at Init.
struct L2NormalizeSquareErrorMeanAttrs {
  int64_t axis = -1;
  double epsilon = 1e-10;
  absl::Status Read(const OpDesc& op);
};

// X and Out@GRAD ([1] of X's dtype) of mean_grad, checked, with X@GRAD
// allocated.
struct MeanGradArgs {
  const Tensor* x = nullptr;
  const Tensor* dout = nullptr;
  Tensor* dx = nullptr;
};
absl::StatusOr<MeanGradArgs> GetMeanGradArgs(KernelContext* ctx);

// softmax_with_cross_entropy(_grad)'s attrs: soft_label must be false
// (else Unimplemented).
struct CrossEntropyAttrs {
  int64_t ignore_index = -100;

  absl::Status Read(const OpDesc& op);
};

// The scores (`scores_arg`: Logits, Softmax or accuracy's Out) and Label of
// a per-row classification op, shapes checked (ClassRowsShape). The labels
// themselves are not range-checked here.
struct ClassBatch {
  const Tensor* scores = nullptr;
  const Tensor* label = nullptr;
  ClassRows rows;
};
absl::StatusOr<ClassBatch> GetClassBatch(const KernelContext& ctx, absl::string_view scores_arg);
// The error of a label outside [0, classes) (and not ignore_index):
// "op 'softmax_with_cross_entropy': label 7 at position 2 is out of range
// [0, 5) (ignore_index -100)"; without ignore_index (accuracy) the
// parenthesis is left out.
absl::Status BadLabelError(const KernelContext& ctx, int64_t label, int64_t position,
                           int64_t classes, std::optional<int64_t> ignore_index);
// The same, for op type `op` (a check that reports after its kernel ran).
absl::Status BadLabelError(absl::string_view op, int64_t label, int64_t position, int64_t classes,
                           std::optional<int64_t> ignore_index);

// softmax_with_cross_entropy's Softmax (the scores' shape) and Loss
// ([..., 1]), allocated.
struct CrossEntropyOutputs {
  Tensor* softmax = nullptr;
  Tensor* loss = nullptr;
};
absl::StatusOr<CrossEntropyOutputs> AllocateCrossEntropyOutputs(KernelContext* ctx,
                                                                const ClassBatch& b);

// softmax_with_cross_entropy_grad's Loss@GRAD ([..., 1] of Softmax's dtype),
// checked, and Logits@GRAD allocated.
struct CrossEntropyGradArgs {
  const Tensor* dloss = nullptr;
  Tensor* dlogits = nullptr;
};
absl::StatusOr<CrossEntropyGradArgs> GetCrossEntropyGradArgs(KernelContext* ctx,
                                                             const ClassBatch& b);

// accuracy's attr k; k < 1 is InvalidArgument.
struct AccuracyAttrs {
  int64_t k = 1;

  absl::Status Read(const OpDesc& op);
};

// accuracy's Accuracy (float32 [1]), Correct and Total (int64 [1]),
// allocated.
struct AccuracyOutputs {
  Tensor* accuracy = nullptr;
  Tensor* correct = nullptr;
  Tensor* total = nullptr;
};
absl::StatusOr<AccuracyOutputs> AllocateAccuracyOutputs(KernelContext* ctx);

}  // namespace prologue
}  // namespace tandem

#endif  // TANDEM_OPS_LOSS_PROLOGUES_H_
