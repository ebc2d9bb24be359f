// Test helpers: tensors from and to float64 values, deterministic inputs.
//
//   Tensor t = MakeTensor(DataType::kInt32, {2, 2}, {1, 2, 3, 4});
//   std::vector<double> v = ToDoubles(t);                 // any place, any dtype
//   Tensor r = RandomTensor(DataType::kFloat32, {3, 5}, /*seed=*/7);
#ifndef TANDEM_FRAMEWORK_TESTING_TENSOR_TESTUTIL_H_
#define TANDEM_FRAMEWORK_TESTING_TENSOR_TESTUTIL_H_

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace tandem {

// Host tensor of `dtype` holding `values` converted as static_cast does
// (bool: value != 0). CHECK-fails if the count does not match the shape.
Tensor MakeTensor(DataType dtype, const Shape& shape, const std::vector<double>& values);
// Values of `t` as doubles; copies device tensors to the host first.
std::vector<double> ToDoubles(const Tensor& t);
// Host tensor with deterministic values: floats uniform in [-2, 2], ints in
// [-50, 50], bools half true.
Tensor RandomTensor(DataType dtype, const Shape& shape, uint64_t seed);
std::vector<double> RandomValues(DataType dtype, int64_t n, uint64_t seed);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TESTING_TENSOR_TESTUTIL_H_
