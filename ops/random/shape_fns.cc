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

absl::StatusOr<UniformRandomAttrs> UniformRandomAttrs::Read(const OpDesc& op) {
  UniformRandomAttrs a;
  ASSIGN_OR_RETURN(a.out, UniformRandomMeta(op));
  ASSIGN_OR_RETURN(a.min, GetAttr<double>(op.attrs, "min", op.type));
  ASSIGN_OR_RETURN(a.max, GetAttr<double>(op.attrs, "max", op.type));
  ASSIGN_OR_RETURN(a.seed, GetAttr<int64_t>(op.attrs, "seed", op.type));
  return a;
}

absl::StatusOr<GaussianRandomAttrs> GaussianRandomAttrs::Read(const OpDesc& op) {
  GaussianRandomAttrs a;
  ASSIGN_OR_RETURN(a.out, GaussianRandomMeta(op));
  ASSIGN_OR_RETURN(a.mean, GetAttr<double>(op.attrs, "mean", op.type));
  ASSIGN_OR_RETURN(a.std, GetAttr<double>(op.attrs, "std", op.type));
  ASSIGN_OR_RETURN(a.seed, GetAttr<int64_t>(op.attrs, "seed", op.type));
  return a;
}

}  // namespace tandem
