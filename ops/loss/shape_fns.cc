#include "ops/loss/shape_fns.h"

#include <vector>

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

absl::StatusOr<ClassRows> ClassRowsShape(absl::string_view op, absl::string_view scores_arg,
                                         const TensorMeta& scores, const TensorMeta& label) {
  RETURN_IF_ERROR(CheckFloating(op, scores_arg, scores.dtype));
  const int rank = scores.shape.rank();
  if (rank == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': ", scores_arg, " must have a class dim, got a 0-d tensor"));
  }
  ClassRows r;
  r.classes = scores.shape.dim(rank - 1);
  std::vector<int64_t> leading(scores.shape.dims().begin(), scores.shape.dims().end() - 1);
  r.rows = 1;
  for (int64_t d : leading) r.rows = r.rows < 0 || d < 0 ? -1 : r.rows * d;
  std::vector<int64_t> per_row = leading;
  per_row.push_back(1);
  r.per_row = Shape(per_row);
  auto matches = [](const Shape& got, const std::vector<int64_t>& want) {
    if (got.rank() != static_cast<int>(want.size())) return false;
    for (int i = 0; i < got.rank(); ++i) {
      if (got.dim(i) != want[i] && got.dim(i) != -1 && want[i] != -1) return false;
    }
    return true;
  };
  if (label.dtype != DataType::kInt64 ||
      !(matches(label.shape, per_row) || matches(label.shape, leading))) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': Label must be int64", r.per_row.ToString(), " or int64",
                     Shape(leading).ToString(), " for ", scores_arg, " ", scores.shape.ToString(),
                     ", got ", DataTypeName(label.dtype), label.shape.ToString()));
  }
  return r;
}

}  // namespace tandem
