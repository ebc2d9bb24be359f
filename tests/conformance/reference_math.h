// Float64 references of the elementwise sub/mul/div, activation, reduction
// and mul ops (see reference.h for the conventions): plain loops over
// indices, no code shared with the kernels.
#ifndef TANDEM_TESTS_CONFORMANCE_REFERENCE_MATH_H_
#define TANDEM_TESTS_CONFORMANCE_REFERENCE_MATH_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "tests/conformance/reference.h"

namespace tandem::reference {

// out = fn(x, y) with broadcasting, Y aligned by `axis`.
Array Broadcast(const Array& x, const Array& y, int64_t axis,
                const std::function<double(double, double)>& fn);
// {dX, dY} of Out = fn(X, Y) given the partial derivatives
// d(x, y) = {dOut/dX, dOut/dY} at each output element.
std::pair<Array, Array> BroadcastGrad(
    const Array& x, const Array& y, const Array& dout, int64_t axis,
    const std::function<std::pair<double, double>(double, double)>& d);

// Element-wise: out[i] = fn(x[i]).
Array Map(const Array& x, const std::function<double(double)>& fn);

// The sum or mean of X over `dims` (>= 0, distinct; all when empty) with
// the reduced dims kept as 1 when keep_dim, else removed ([1] if none is
// left).
Array Reduce(const Array& x, const std::vector<int>& dims, bool keep_dim, bool mean);
// dX: dOut (shaped like Reduce's output) spread over the reduced dims,
// divided by the count for a mean.
Array ReduceGrad(const Array& x, const std::vector<int>& dims, const Array& dout, bool mean);

// The first `num_col_dims` dims of `a` as rows, the rest as columns.
Array AsMatrix(const Array& a, int num_col_dims);

}  // namespace tandem::reference

#endif  // TANDEM_TESTS_CONFORMANCE_REFERENCE_MATH_H_
