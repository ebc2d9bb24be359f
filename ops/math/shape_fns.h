// Shape functions of the math ops, used by their schemas (ops/math/*_op.cc)
// and by kernels, so both agree and every kernel validates its inputs.
//
//   ASSIGN_OR_RETURN(Shape out, BroadcastShapes("elementwise_add", x, y, axis));
//   ASSIGN_OR_RETURN(MatmulDims d, MatmulShape("matmul", x, y, tx, ty));
//   ASSIGN_OR_RETURN(FlatMatmulDims d, FcShape("fc", input, 1, w, &bias));
//   ASSIGN_OR_RETURN(ReduceDims r, ReduceShape("reduce_sum", x, {-1}, false, false));
#ifndef TANDEM_OPS_MATH_SHAPE_FNS_H_
#define TANDEM_OPS_MATH_SHAPE_FNS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/op/op_schema.h"
#include "framework/types/data_type.h"
#include "framework/types/shape.h"

namespace tandem {

// Aligns Y with X as PaddlePaddle does: axis == -1 aligns trailing
// dims (numpy); axis >= 0 places Y's dims at X's dims [axis, axis+rank(Y)).
// Returns Y's shape padded with 1s to rank(X), or InvalidArgument.
absl::StatusOr<Shape> AlignForBroadcast(absl::string_view op, const Shape& x,
                                        const Shape& y, int64_t axis);

// The numpy broadcast of X and Y after alignment; InvalidArgument naming the
// op, both shapes and the first incompatible dim. Unknown dims (-1) stay -1.
absl::StatusOr<Shape> BroadcastShapes(absl::string_view op, const Shape& x,
                                      const Shape& y, int64_t axis = -1);

// OK if `dtype` (of argument `arg`) is float32 or float64; otherwise
// InvalidArgument "op 'mean': X must be float32 or float64, got int32".
absl::Status CheckFloating(absl::string_view op, absl::string_view arg, DataType dtype);

// OK if argument `arg` is `dtype` with `shape` as expected (e.g. a gradient
// input matching its forward variable); otherwise InvalidArgument
// "op 'mean_grad': Out@GRAD is float32[2], expected float32[1]".
absl::Status CheckArgMeta(absl::string_view op, absl::string_view arg,
                          DataType dtype, const Shape& shape, DataType want_dtype,
                          const Shape& want_shape);

// `axis` of a tensor `x_arg` with shape `x` as an index in [0, rank):
// negative axes count from the end. InvalidArgument naming the op, the
// argument, its shape and the accepted range otherwise.
//   NormalizeAxis("l2_normalize", "X", Shape({2, 3}), -1)  ->  1
absl::StatusOr<int> NormalizeAxis(absl::string_view op, absl::string_view x_arg,
                                  const Shape& x, int64_t axis);

// Batched matrix product geometry: Out[b] = op(X[b]) * op(Y[b]).
struct MatmulDims {
  Shape out;
  int64_t batch = 1;   // product of the output batch dims
  int64_t m = 0, k = 0, n = 0;
  bool x_batched = false;  // X has batch dims (else it is shared)
  bool y_batched = false;
};
// X and Y have rank >= 2; their batch dims (all but the last two) must be
// equal, or one side has none (it is broadcast).
absl::StatusOr<MatmulDims> MatmulShape(absl::string_view op, const Shape& x,
                                       const Shape& y, bool transpose_x,
                                       bool transpose_y);

// A tensor seen as a matrix (mul, fc): its first num_col_dims dims form the
// rows, the others the columns. `arg` and `attr` name the argument and the
// attribute holding num_col_dims, for messages.
struct MatrixView {
  absl::string_view arg;
  Shape shape;
  int64_t num_col_dims = 1;
  absl::string_view attr;
};
// Flattened matrix product geometry: Out[m, n] = X[m, k] * Y[k, n], with
// Out's shape X.dims[:x.num_col_dims] + Y.dims[y.num_col_dims:]. Unknown
// dims (-1) make m, k or n -1. InvalidArgument naming the op, the attribute
// and its range unless 1 <= num_col_dims < rank, or naming both shapes
// when the inner dims differ.
struct FlatMatmulDims {
  Shape out;
  int64_t m = 0, k = 0, n = 0;
};
absl::StatusOr<FlatMatmulDims> FlatMatmulShape(absl::string_view op, const MatrixView& x,
                                               const MatrixView& y);

// fc's geometry: Input flattened at in_num_col_dims times W, a [K, M]
// matrix (FlatMatmulShape), plus Bias of shape [M] unless `bias` is null.
// All have one dtype, float32 or float64. InvalidArgument naming the op
// and the offending argument otherwise.
absl::StatusOr<FlatMatmulDims> FcShape(absl::string_view op, const TensorMeta& input,
                                       int64_t in_num_col_dims, const TensorMeta& w,
                                       const TensorMeta* bias);

// Geometry of reduce_sum / reduce_mean over `dims` of X (negative dims
// count from the end; empty `dims` or `reduce_all` reduce every dim).
struct ReduceDims {
  // X without the reduced dims ([1] when none is left), or with them as 1
  // when keep_dim.
  Shape out;
  // X's rank with the reduced dims as 1: how Out's elements broadcast
  // back over X.
  Shape kept;
  // Elements reduced into each output element; -1 if a reduced dim is
  // unknown.
  int64_t count = 1;
};
// InvalidArgument naming the op, X's shape and the dim when a dim is out of
// range or listed twice.
absl::StatusOr<ReduceDims> ReduceShape(absl::string_view op, const Shape& x,
                                       const std::vector<int64_t>& dims, bool keep_dim,
                                       bool reduce_all);
// reduce_mean's extra rule: InvalidArgument "op 'reduce_mean': X [3, 0] has
// no elements to average over dim" when a reduced dim is 0.
absl::Status CheckMeanCount(absl::string_view op, const Shape& x, const ReduceDims& r);

}  // namespace tandem

#endif  // TANDEM_OPS_MATH_SHAPE_FNS_H_
