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
#include "framework/op/op_desc.h"
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

// Out of reshape: attr `shape` with 0 copying X's dim at the same index and
// one -1 inferred from the element count. Dims of X that are not known yet
// (-1) give -1 where they matter. InvalidArgument naming the op, X's shape
// and element count and the target shape: "op 'reshape': cannot reshape X
// [2, 3] (6 elements) to [4, 2] (8 elements)", and for a second -1, a dim
// below -1 or a 0 past X's rank.
absl::StatusOr<Shape> ReshapeShape(absl::string_view op, const Shape& x,
                                   absl::Span<const int64_t> shape);

// Out of transpose: Out.dim(k) = X.dim(axis[k]). `axis` must hold each of
// 0 .. rank(X) - 1 once; InvalidArgument naming the op, axis and X's shape
// otherwise.
absl::StatusOr<Shape> TransposeShape(absl::string_view op, const Shape& x,
                                     absl::Span<const int64_t> axis);
// The permutation that undoes `axis` (transpose_grad's).
std::vector<int64_t> InversePermutation(absl::Span<const int64_t> axis);

// Geometry of concatenating (or splitting) tensors along `axis`: `outer` is
// the product of the dims before it, `inner` of the dims after it (each -1
// if a dim it multiplies is not known yet), and piece i spans sizes[i]
// along it.
struct AxisPieces {
  int axis = 0;
  int64_t outer = 1, inner = 1;
  std::vector<int64_t> sizes;
  Shape whole;  // the concatenated shape
};

// concat of tensors with shapes `xs` (at least one, the same rank, equal
// dims except along `axis`; negative counts from the end). Unknown dims
// (-1) are allowed at build time: the axis dim of the result is -1 if any
// piece's is, other dims take any known value. InvalidArgument naming the
// op, the offending X[i] and its shape otherwise.
absl::StatusOr<AxisPieces> ConcatGeometry(absl::string_view op, absl::Span<const Shape> xs,
                                          int64_t axis);

// The most pieces split makes (each is a variable of the program).
inline constexpr int64_t kMaxSplitPieces = int64_t{1} << 16;

// split of X along `axis` (negative counts from the end) into `num` equal
// pieces (0 < num <= kMaxSplitPieces; X.dim(axis) must be a multiple of num) or into
// `sections` (num == 0: sizes >= 0, at most one -1 taking the rest; they
// must add up to X.dim(axis)). A dim not known yet gives pieces of size -1
// where they depend on it. InvalidArgument naming the op, the attributes and
// X's shape otherwise.
absl::StatusOr<AxisPieces> SplitGeometry(absl::string_view op, const Shape& x, int64_t axis,
                                         int64_t num, absl::Span<const int64_t> sections);
// The shape of piece i of `p`: p.whole with p.sizes[i] along p.axis.
Shape PieceShape(const AxisPieces& p, int i);

// The number of variables `op` binds to output `arg` (0 if none).
size_t BoundCount(const OpDesc& op, absl::string_view arg);

// Attr grad_positions of concat_grad and split_grad: the pieces (of `n`)
// whose gradients are bound, strictly increasing in [0, n); empty means all
// n. Returns the positions as a list of size the number of bound gradients;
// InvalidArgument naming the op otherwise.
absl::StatusOr<std::vector<int64_t>> GradPositions(absl::string_view op,
                                                   absl::Span<const int64_t> grad_positions,
                                                   int64_t n);

}  // namespace tandem

#endif  // TANDEM_OPS_ARRAY_SHAPE_FNS_H_
