#include "ops/random/shape_fns.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "ops/math/shape_fns.h"

namespace tandem {

absl::StatusOr<TensorMeta> UniformRandomMeta(const OpDesc& op) {
  ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                   GetAttr<std::vector<int64_t>>(op.attrs, "shape", op.type));
  ASSIGN_OR_RETURN(DataType dtype, GetAttr<DataType>(op.attrs, "dtype", op.type));
  RETURN_IF_ERROR(CheckFloating(op.type, "attribute 'dtype'", dtype));
  absl::StatusOr<Shape> shape = Shape::Make(dims);
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op.type, "': attribute 'shape': ", shape.status().message()));
  }
  return TensorMeta{dtype, *std::move(shape)};
}

absl::StatusOr<TensorMeta> GaussianRandomMeta(const OpDesc& op) {
  ASSIGN_OR_RETURN(TensorMeta out, UniformRandomMeta(op));
  ASSIGN_OR_RETURN(const double mean, GetAttr<double>(op.attrs, "mean", op.type));
  ASSIGN_OR_RETURN(const double std, GetAttr<double>(op.attrs, "std", op.type));
  if (!std::isfinite(mean) || !std::isfinite(std) || std < 0) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op.type,
                                                   "': attributes 'mean' and 'std' must be finite "
                                                   "with std >= 0, got mean ",
                                                   mean, ", std ", std));
  }
  return out;
}

}  // namespace tandem
