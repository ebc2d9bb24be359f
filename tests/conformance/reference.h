// Float64 reference implementations of the ops, written independently of
// every backend and of the ops' shape functions (plain index arithmetic, no
// shared code with kernels).
#ifndef TANDEM_TESTS_CONFORMANCE_REFERENCE_H_
#define TANDEM_TESTS_CONFORMANCE_REFERENCE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "framework/types/data_type.h"
#include "framework/types/shape.h"

namespace tandem::reference {

// A float64 array with its shape.
struct Array {
  Shape shape;
  std::vector<double> values;
};

// Converts like static_cast<T> (bool: != 0) and back to double.
double Convert(double v, DataType to);
std::vector<double> Convert(const std::vector<double>& v, DataType to);

// Y's shape aligned to X's rank by the elementwise `axis` rule.
Shape AlignY(const Shape& x, const Shape& y, int64_t axis);
Array Add(const Array& x, const Array& y, int64_t axis);
// {dX, dY}
std::pair<Array, Array> AddGrad(const Array& x, const Array& y, const Array& dout, int64_t axis);
// Calls fn(i, xi, yi) for every element i of the broadcast of X and Y (Y
// aligned by `axis`) with the offsets of the X and Y elements feeding it;
// returns the broadcast shape.
Shape ForEachBroadcast(const Shape& x, const Shape& y, int64_t axis,
                       const std::function<void(int64_t, int64_t, int64_t)>& fn);
Array Matmul(const Array& x, const Array& y, bool tx, bool ty, double alpha);
std::pair<Array, Array> MatmulGrad(const Array& x, const Array& y, const Array& dout, bool tx,
                                   bool ty, double alpha);

// The dense [height, ...] array that sparse rows stand for: zeros, with
// value row i added to row rows[i].
Array Densify(int64_t height, const std::vector<int64_t>& rows, const Array& value);

// lookup_table: Out = W[ids] with shape ids.shape + [dim]; rows equal to
// `padding_row` (-1: none) are zeros. Ids hold integral values in range.
Array LookupTable(const Array& ids, const Array& w, int64_t padding_row);
// Dense W@GRAD: zeros with row ids[i] += dout[i] (padding row excluded).
Array LookupTableGrad(const Array& ids, const Shape& w_shape, const Array& dout,
                      int64_t padding_row);

// l2_normalize along dim `axis` (>= 0).
Array L2Normalize(const Array& x, int axis, double epsilon);
Array L2NormalizeGrad(const Array& x, const Array& dout, int axis, double epsilon);

Array SquareErrorCost(const Array& x, const Array& y);
// {dX, dY}
std::pair<Array, Array> SquareErrorCostGrad(const Array& x, const Array& y, const Array& dout);
Array Mean(const Array& x);
Array MeanGrad(const Array& x, const Array& dout);

// Param after sgd with a dense gradient, or a sparse one: value row i
// belongs to table row rows[i].
Array SgdDense(const Array& param, const Array& grad, double lr);
Array SgdSparse(const Array& param, const std::vector<int64_t>& rows, const Array& value,
                double lr);

// numpy-style slice (see the slice op) and its gradient.
Array Slice(const Array& x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
            const std::vector<int64_t>& ends);
Array SliceGrad(const Shape& x_shape, const Array& dout, const std::vector<int64_t>& axes,
                const std::vector<int64_t>& starts, const std::vector<int64_t>& ends);
// crop_tensor with `sizes` (-1: to the end) and `offsets` (empty: zeros).
Array Crop(const Array& x, const std::vector<int64_t>& sizes, const std::vector<int64_t>& offsets);
Array CropGrad(const Shape& x_shape, const Array& dout, const std::vector<int64_t>& sizes,
               const std::vector<int64_t>& offsets);

// uniform_random's values, converted to `dtype`.
Array UniformRandom(const Shape& shape, DataType dtype, double min, double max, int64_t seed);

}  // namespace tandem::reference

#endif  // TANDEM_TESTS_CONFORMANCE_REFERENCE_H_
