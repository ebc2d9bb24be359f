#include "ops/array/shape_fns.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "ops/math/shape_fns.h"

namespace tandem {

absl::StatusOr<std::vector<int32_t>> ShapeValues(absl::string_view op, const Shape& input) {
  std::vector<int32_t> values;
  for (int d = 0; d < input.rank(); ++d) {
    if (input.dim(d) > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op, "': dim ", d, " of Input ",
                                                     input.ToString(), " does not fit in int32"));
    }
    values.push_back(static_cast<int32_t>(input.dim(d)));
  }
  return values;
}

absl::StatusOr<Box> SliceBox(absl::string_view op, const Shape& input,
                             absl::Span<const int64_t> axes, absl::Span<const int64_t> starts,
                             absl::Span<const int64_t> ends) {
  if (axes.size() != starts.size() || axes.size() != ends.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': axes, starts and ends must have the same length, got ",
                     axes.size(), ", ", starts.size(), " and ", ends.size()));
  }
  Box box{std::vector<int64_t>(input.rank(), 0), input};
  std::vector<bool> seen(input.rank(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(op, "Input", input, axes[i]));
    if (seen[axis]) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op, "': axis ", axis, " appears twice in axes [",
                       absl::StrJoin(axes, ", "), "] for Input ", input.ToString()));
    }
    seen[axis] = true;
    const int64_t dim = input.dim(axis);
    if (dim < 0) {  // unknown yet
      box.offsets[axis] = -1;
      continue;
    }
    auto clamp = [dim](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + dim : v, 0, dim); };
    const int64_t start = clamp(starts[i]), end = clamp(ends[i]);
    box.offsets[axis] = start;
    box.shape.set_dim(axis, std::max<int64_t>(0, end - start));
  }
  return box;
}

absl::Status CheckCropShapeArg(absl::string_view op, DataType dtype, const Shape& shape) {
  if (dtype == DataType::kInt32 && shape.rank() == 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("op '", op,
                                                 "': Shape must be a 1-D int32 tensor, got ",
                                                 DataTypeName(dtype), shape.ToString()));
}

absl::StatusOr<Box> CropBox(absl::string_view op, const Shape& x, absl::Span<const int64_t> sizes,
                            absl::Span<const int64_t> offsets) {
  if (static_cast<int>(sizes.size()) != x.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op, "': Shape has ", sizes.size(),
                                                   " values but X ", x.ToString(), " has rank ",
                                                   x.rank()));
  }
  if (!offsets.empty() && static_cast<int>(offsets.size()) != x.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op, "': attribute 'offsets' has ",
                                                   offsets.size(), " values but X ", x.ToString(),
                                                   " has rank ", x.rank()));
  }
  Box box{std::vector<int64_t>(x.rank(), 0), x};
  for (int d = 0; d < x.rank(); ++d) {
    const int64_t offset = offsets.empty() ? 0 : offsets[d];
    const int64_t dim = x.dim(d);
    if (offset < 0 || sizes[d] < -1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op, "': crop of size ", sizes[d], " at offset ", offset, " is invalid for dim ",
          d, " of X ", x.ToString(), ": sizes must be >= 0 or -1, offsets >= 0"));
    }
    box.offsets[d] = offset;
    if (dim < 0) {  // unknown yet: an explicit size is all we know
      box.shape.set_dim(d, sizes[d]);
      continue;
    }
    const int64_t size = sizes[d] == -1 ? dim - offset : sizes[d];
    if (size < 0 || size > dim - offset) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op, "': crop of size ", sizes[d],
                                                     " at offset ", offset, " exceeds dim ", d,
                                                     " of X ", x.ToString()));
    }
    box.shape.set_dim(d, size);
  }
  return box;
}

}  // namespace tandem
