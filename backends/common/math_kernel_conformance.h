// Conformance tests of the math kernels (math_kernels.h semantics) through
// RunOpEager, against hand-computed values and float64 references,
// including broadcast, axis, empty, 0-d, odd sizes, batched and transposed
// matmul, gradient ops and bad input. Written once; each backend's test
// runs them on its places:
//
//   // backends/sim/sim_kernels_test.cc, linking :math_kernel_conformance
//   INSTANTIATE_TEST_SUITE_P(Sim, MathKernelConformance,
//                            ::testing::Values(SimPlace(0)), PlaceTestName);
//
// Inputs start on the host; outputs are copied back for checking. Tests
// run synchronously and may share the process with other suites.
#ifndef TANDEM_BACKENDS_COMMON_MATH_KERNEL_CONFORMANCE_H_
#define TANDEM_BACKENDS_COMMON_MATH_KERNEL_CONFORMANCE_H_

#include <string>
#include <vector>

#include "framework/op/op_desc.h"
#include "framework/place/place.h"
#include "framework/tensor/tensor.h"
#include "framework/tensor/variable.h"
#include "gtest/gtest.h"

namespace tandem {

// The ops whose kernels math_kernels.h provides.
const std::vector<std::string>& MathKernelOps();

class MathKernelConformance : public ::testing::TestWithParam<Place> {};

// "cpu", "sim_0": a test-name-safe spelling of the place.
std::string PlaceTestName(const ::testing::TestParamInfo<Place>& info);

// Helpers for kernel tests.
namespace conformance {

OpDesc Op(const std::string& type, AttrMap attrs = {});

// Deterministic values in [-1.5, 1.5] (k / 7 - 1.5, so integer T gets
// -1, 0 and 1), varied by `seed`.
template <typename T>
std::vector<T> Values(int64_t n, int seed) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(((i * 37 + seed * 11) % 23) / 7.0 - 1.5);
  }
  return v;
}

// A host tensor variable.
template <typename T>
Variable Var(const Shape& shape, const std::vector<T>& values) {
  return Variable(Tensor::FromVector<T>(shape, values));
}

}  // namespace conformance

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_MATH_KERNEL_CONFORMANCE_H_
