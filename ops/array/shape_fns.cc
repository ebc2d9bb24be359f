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

namespace {

// The product of x's dims [begin, end), or -1 if one is unknown or the
// product overflows int64 (a shape merged from several pieces' known dims).
int64_t DimProduct(const Shape& x, int begin, int end) {
  int64_t p = 1;
  for (int d = begin; d < end; ++d) {
    if (x.dim(d) < 0 || __builtin_mul_overflow(p, x.dim(d), &p)) return -1;
  }
  return p;
}

}  // namespace

absl::StatusOr<Shape> ReshapeShape(absl::string_view op, const Shape& x,
                                   absl::Span<const int64_t> shape) {
  const std::string target = absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
  std::vector<int64_t> out(shape.begin(), shape.end());
  int infer = -1;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (shape[i] < -1) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op, "': attribute shape ", target,
                                                     " has invalid dim ", shape[i], " at index ", i,
                                                     " (need >= -1)"));
    }
    if (shape[i] == -1) {
      if (infer >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("op '", op, "': attribute shape ", target, " has more than one -1"));
      }
      infer = i;
    } else if (shape[i] == 0) {
      if (i >= x.rank()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "op '", op, "': attribute shape ", target, " has 0 (copy X's dim) at index ", i,
            " but X ", x.ToString(), " has rank ", x.rank()));
      }
      out[i] = x.dim(i);
    }
  }
  const int64_t x_count = DimProduct(x, 0, x.rank());
  // The product of the known target dims other than the inferred one.
  int64_t rest = 1;
  bool rest_known = true;
  for (int i = 0; i < static_cast<int>(out.size()); ++i) {
    if (i == infer) continue;
    if (out[i] < 0) {
      rest_known = false;
      continue;
    }
    if (out[i] > 0 && rest > std::numeric_limits<int64_t>::max() / out[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op, "': attribute shape ", target, " has more than 2^63 elements"));
    }
    rest *= out[i];
  }
  if (x_count < 0 || !rest_known) {  // not known yet
    if (infer >= 0) out[infer] = -1;
    return Shape(out);
  }
  const std::string from =
      absl::StrCat("cannot reshape X ", x.ToString(), " (", x_count, " elements) to ", target);
  if (infer >= 0) {
    if (rest == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op, "': ", from, ": the -1 is undefined when the other dims' product is 0"));
    }
    if (x_count % rest != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op, "': ", from, ": ", x_count,
                       " elements are not a multiple of the other dims' product ", rest));
    }
    out[infer] = x_count / rest;
  } else if (rest != x_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': ", from, " (", rest, " elements)"));
  }
  return Shape(out);
}

absl::StatusOr<Shape> TransposeShape(absl::string_view op, const Shape& x,
                                     absl::Span<const int64_t> axis) {
  std::vector<bool> seen(x.rank(), false);
  bool ok = static_cast<int>(axis.size()) == x.rank();
  for (size_t k = 0; ok && k < axis.size(); ++k) {
    ok = axis[k] >= 0 && axis[k] < x.rank() && !seen[axis[k]];
    if (ok) seen[axis[k]] = true;
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': axis [", absl::StrJoin(axis, ", "), "] is not a permutation of the ",
        x.rank(), " dims of X ", x.ToString(), " (need each of 0..", x.rank() - 1, " once)"));
  }
  std::vector<int64_t> out(axis.size());
  for (size_t k = 0; k < axis.size(); ++k) out[k] = x.dim(axis[k]);
  return Shape(out);
}

std::vector<int64_t> InversePermutation(absl::Span<const int64_t> axis) {
  std::vector<int64_t> inverse(axis.size());
  for (size_t k = 0; k < axis.size(); ++k) inverse[axis[k]] = static_cast<int64_t>(k);
  return inverse;
}

absl::StatusOr<AxisPieces> ConcatGeometry(absl::string_view op, absl::Span<const Shape> xs,
                                          int64_t axis) {
  if (xs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op, "': X is an empty list"));
  }
  AxisPieces p;
  ASSIGN_OR_RETURN(p.axis, NormalizeAxis(op, "X[0]", xs[0], axis));
  p.whole = xs[0];
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Shape& x = xs[i];
    if (x.rank() != p.whole.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op, "': X[", i, "] ", x.ToString(),
                                                     " has rank ", x.rank(), " but X[0] ",
                                                     xs[0].ToString(), " has rank ", xs[0].rank()));
    }
    for (int d = 0; d < x.rank(); ++d) {
      if (d == p.axis || x.dim(d) < 0) continue;
      if (p.whole.dim(d) >= 0 && p.whole.dim(d) != x.dim(d)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "op '", op, "': X[", i, "] ", x.ToString(), " differs from X[0] ", xs[0].ToString(),
            " in dim ", d, " (only the concatenation axis ", p.axis, " may differ)"));
      }
      p.whole.set_dim(d, x.dim(d));
    }
    const int64_t size = x.dim(p.axis);
    p.sizes.push_back(size);
    if (size < 0 || total < 0) {
      total = -1;
    } else if (__builtin_add_overflow(total, size, &total)) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op, "': X[", i, "] ", x.ToString(),
                                                     " makes the concatenated dim ", p.axis,
                                                     " overflow int64"));
    }
  }
  p.whole.set_dim(p.axis, total);
  p.outer = DimProduct(p.whole, 0, p.axis);
  p.inner = DimProduct(p.whole, p.axis + 1, p.whole.rank());
  return p;
}

absl::StatusOr<AxisPieces> SplitGeometry(absl::string_view op, const Shape& x, int64_t axis,
                                         int64_t num, absl::Span<const int64_t> sections) {
  AxisPieces p;
  ASSIGN_OR_RETURN(p.axis, NormalizeAxis(op, "X", x, axis));
  p.whole = x;
  p.outer = DimProduct(x, 0, p.axis);
  p.inner = DimProduct(x, p.axis + 1, x.rank());
  const int64_t dim = x.dim(p.axis);
  const std::string what = absl::StrCat(" for X ", x.ToString(), " along axis ", p.axis);
  if ((num > 0) == !sections.empty() || num < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': give either num > 0 or sections, got num ", num,
                     " and sections [", absl::StrJoin(sections, ", "), "]"));
  }
  if (num > kMaxSplitPieces) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op, "': num ", num,
                                                   " is more pieces than the ", kMaxSplitPieces,
                                                   " a split may make", what));
  }
  if (num > 0) {
    if (dim >= 0 && dim % num != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op, "': num ", num, " does not divide dim ", dim, what));
    }
    p.sizes.assign(num, dim < 0 ? -1 : dim / num);
    return p;
  }
  const std::string attr = absl::StrCat("sections [", absl::StrJoin(sections, ", "), "]");
  int infer = -1;
  int64_t sum = 0;
  for (int i = 0; i < static_cast<int>(sections.size()); ++i) {
    if (sections[i] < -1 || (sections[i] == -1 && infer >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op, "': ", attr, " is invalid", what,
                       ": sizes must be >= 0, with at most one -1 taking the rest"));
    }
    if (sections[i] == -1) {
      infer = i;
    } else if (__builtin_add_overflow(sum, sections[i], &sum)) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op, "': ", attr, " add up to more than int64 holds", what));
    }
  }
  p.sizes.assign(sections.begin(), sections.end());
  if (dim < 0) return p;
  if (infer >= 0 ? sum > dim : sum != dim) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op, "': ", attr, " add up to ", sum,
                                                   infer >= 0 ? " (plus the -1)" : "", ", not dim ",
                                                   dim, what));
  }
  if (infer >= 0) p.sizes[infer] = dim - sum;
  return p;
}

Shape PieceShape(const AxisPieces& p, int i) {
  Shape s = p.whole;
  s.set_dim(p.axis, p.sizes[i]);
  return s;
}

size_t BoundCount(const OpDesc& op, absl::string_view arg) {
  auto it = op.outputs.find(std::string(arg));
  return it == op.outputs.end() ? 0 : it->second.size();
}

absl::StatusOr<std::vector<int64_t>> GradPositions(absl::string_view op,
                                                   absl::Span<const int64_t> grad_positions,
                                                   int64_t n) {
  std::vector<int64_t> positions(grad_positions.begin(), grad_positions.end());
  if (positions.empty()) {
    for (int64_t i = 0; i < n; ++i) positions.push_back(i);
    return positions;
  }
  for (size_t i = 0; i < positions.size(); ++i) {
    if (positions[i] < 0 || positions[i] >= n || (i > 0 && positions[i] <= positions[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op, "': attribute grad_positions [", absl::StrJoin(positions, ", "),
                       "] must be strictly increasing positions in [0, ", n, ")"));
    }
  }
  return positions;
}

}  // namespace tandem
