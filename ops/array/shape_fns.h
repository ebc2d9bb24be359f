// Shape functions of the array ops (shape, slice, crop_tensor), used by
// their schemas (ops/array/*_op.cc) and by kernels, so both agree.
//
//   ASSIGN_OR_RETURN(Box box, SliceBox("slice", x.shape(), axes, starts, ends));
//   // Out = X[box.offsets[d] : box.offsets[d] + box.shape.dim(d)] for every dim d
#ifndef TANDEM_OPS_ARRAY_SHAPE_FNS_H_
#define TANDEM_OPS_ARRAY_SHAPE_FNS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "framework/types/data_type.h"
#include "framework/types/shape.h"

namespace tandem {

// A box-shaped region of a tensor: the elements whose index in every dim d
// is in [offsets[d], offsets[d] + shape.dim(d)). offsets has one value per
// dim; a value or dim that is not known yet (unknown input dims) is -1.
struct Box {
  std::vector<int64_t> offsets;
  Shape shape;
};

// The values of the shape op's output (int32 [rank]): `input`'s dims.
// InvalidArgument naming the op, the dim and the shape if one does not fit
// in int32.
absl::StatusOr<std::vector<int32_t>> ShapeValues(absl::string_view op, const Shape& input);

// The region of `input` that slice keeps, numpy style: for each listed
// axis (negative axes count from the end), a negative start or end adds the
// dim's size, then both are clamped to [0, dim]; end <= start keeps
// nothing. Unlisted dims are kept whole; the rank never changes.
// InvalidArgument naming the op for lists of different lengths, an axis
// out of range or an axis listed twice.
absl::StatusOr<Box> SliceBox(absl::string_view op, const Shape& input,
                             absl::Span<const int64_t> axes, absl::Span<const int64_t> starts,
                             absl::Span<const int64_t> ends);

// OK if crop_tensor's Shape argument is a 1-D int32 tensor; otherwise
// InvalidArgument "op 'crop_tensor': Shape must be a 1-D int32 tensor, got
// int64[2]".
absl::Status CheckCropShapeArg(absl::string_view op, DataType dtype, const Shape& shape);

// The region of `x` that crop_tensor keeps: dim d starts at offsets[d]
// (empty `offsets`: all 0) and has size sizes[d], where -1 means
// x.dim(d) - offsets[d]. `sizes` and non-empty `offsets` have one value per
// dim of x. InvalidArgument naming the op, the dim and X's shape for a crop
// that does not fit: "op 'crop_tensor': crop of size 9 at offset 0 exceeds
// dim 1 of X [1, 3, 8, 8]", or a negative offset or size other than -1.
absl::StatusOr<Box> CropBox(absl::string_view op, const Shape& x, absl::Span<const int64_t> sizes,
                            absl::Span<const int64_t> offsets);

}  // namespace tandem

#endif  // TANDEM_OPS_ARRAY_SHAPE_FNS_H_
