// Shape functions of the loss ops (square_error_cost, mean), used by their
// schemas (ops/loss/*_op.cc) and by kernels, so both agree.
//
//   ASSIGN_OR_RETURN(TensorMeta out, SquareErrorCostMeta("square_error_cost", x, y));
//   ASSIGN_OR_RETURN(TensorMeta out, MeanMeta("mean", x));
#ifndef TANDEM_OPS_LOSS_SHAPE_FNS_H_
#define TANDEM_OPS_LOSS_SHAPE_FNS_H_

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

}  // namespace tandem

#endif  // TANDEM_OPS_LOSS_SHAPE_FNS_H_
