// Shape functions of the loss ops (square_error_cost, mean,
// softmax_with_cross_entropy), used by their schemas (ops/loss/*_op.cc) and
// by kernels, so both agree; ClassRowsShape is shared with the accuracy
// metric.
//
//   ASSIGN_OR_RETURN(TensorMeta out, SquareErrorCostMeta("square_error_cost", x, y));
//   ASSIGN_OR_RETURN(TensorMeta out, MeanMeta("mean", x));
//   ASSIGN_OR_RETURN(ClassRows r, ClassRowsShape("accuracy", "Out", scores, label));
#ifndef TANDEM_OPS_LOSS_SHAPE_FNS_H_
#define TANDEM_OPS_LOSS_SHAPE_FNS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/op/op_schema.h"

namespace tandem {

// Out of square_error_cost: X and Y must have the same dtype (float32 or
// float64) and the same shape (an unknown dim, -1, matches any); Out has
// that dtype and shape. InvalidArgument naming the op and both metas.
absl::StatusOr<TensorMeta> SquareErrorCostMeta(absl::string_view op, const TensorMeta& x,
                                               const TensorMeta& y);

// Out of mean: X's dtype (float32 or float64) with shape [1].
// InvalidArgument "op 'mean': X is empty" when X is known to have no
// elements.
absl::StatusOr<TensorMeta> MeanMeta(absl::string_view op, const TensorMeta& x);

// Rows of a classifier's output: scores [..., C] (argument `scores_arg`,
// float32 or float64, rank >= 1) hold `rows` = prod(leading dims) rows of
// `classes` = C scores; Label is int64 with the leading dims plus a last
// dim of 1 ([N, 1] for [N, C]), or the leading dims alone ([N]).
// Unknown dims (-1) give -1. InvalidArgument naming the op, both
// arguments and shapes otherwise.
struct ClassRows {
  int64_t rows = 0;
  int64_t classes = 0;
  Shape per_row;  // the leading dims + [1]: the shape of a per-row result
};
absl::StatusOr<ClassRows> ClassRowsShape(absl::string_view op, absl::string_view scores_arg,
                                         const TensorMeta& scores, const TensorMeta& label);

}  // namespace tandem

#endif  // TANDEM_OPS_LOSS_SHAPE_FNS_H_
