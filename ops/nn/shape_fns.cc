#include "ops/nn/shape_fns.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "ops/math/shape_fns.h"

namespace tandem {

absl::StatusOr<Shape> LookupTableShape(absl::string_view op, const TensorMeta& ids,
                                       const TensorMeta& w) {
  if (ids.dtype != DataType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': Ids must be int64, got ", DataTypeName(ids.dtype)));
  }
  RETURN_IF_ERROR(CheckFloating(op, "W", w.dtype));
  if (w.shape.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': W must be a [rows, dim] table, got ", w.shape.ToString()));
  }
  std::vector<int64_t> out = ids.shape.ToVector();
  out.push_back(w.shape.dim(1));
  return Shape(out);
}

absl::StatusOr<int64_t> PaddingRow(absl::string_view op, int64_t padding_idx, int64_t rows) {
  if (padding_idx == -1) return -1;
  const int64_t row = padding_idx < 0 ? rows + padding_idx : padding_idx;
  if (row < 0 || row >= rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': attribute 'padding_idx' ", padding_idx, " is out of range for a table of ",
        rows, " rows (need -1 for none, or ", -rows, " <= padding_idx < ", rows, ")"));
  }
  return row;
}

}  // namespace tandem
