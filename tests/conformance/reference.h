// Float64 reference implementations of the math ops, written independently
// of every backend (plain index arithmetic, no shared code with kernels).
#ifndef TANDEM_TESTS_CONFORMANCE_REFERENCE_H_
#define TANDEM_TESTS_CONFORMANCE_REFERENCE_H_

#include <cstdint>
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
std::pair<Array, Array> AddGrad(const Array& x, const Array& y, const Array& dout,
                                int64_t axis);
Array Matmul(const Array& x, const Array& y, bool tx, bool ty, double alpha);
std::pair<Array, Array> MatmulGrad(const Array& x, const Array& y, const Array& dout,
                                   bool tx, bool ty, double alpha);

}  // namespace tandem::reference

#endif  // TANDEM_TESTS_CONFORMANCE_REFERENCE_H_
