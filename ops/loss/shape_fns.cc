#include "ops/loss/shape_fns.h"

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "ops/math/shape_fns.h"

namespace tandem {

absl::StatusOr<TensorMeta> SquareErrorCostMeta(absl::string_view op, const TensorMeta& x,
                                               const TensorMeta& y) {
  RETURN_IF_ERROR(CheckFloating(op, "X", x.dtype));
  bool same = x.dtype == y.dtype && x.shape.rank() == y.shape.rank();
  Shape out = x.shape;
  for (int i = 0; same && i < x.shape.rank(); ++i) {
    const int64_t a = x.shape.dim(i), b = y.shape.dim(i);
    same = a == b || a == -1 || b == -1;
    if (a == -1) out.set_dim(i, b);
  }
  if (!same) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': X is ", DataTypeName(x.dtype), x.shape.ToString(), " but Y is ",
        DataTypeName(y.dtype), y.shape.ToString(), "; they must have the same dtype and shape"));
  }
  return TensorMeta{x.dtype, out};
}

absl::StatusOr<TensorMeta> MeanMeta(absl::string_view op, const TensorMeta& x) {
  RETURN_IF_ERROR(CheckFloating(op, "X", x.dtype));
  absl::StatusOr<int64_t> n = x.shape.NumElements();  // not OK when a dim is unknown
  if (n.ok() && *n == 0) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op, "': X is empty"));
  }
  return TensorMeta{x.dtype, Shape({1})};
}

}  // namespace tandem
