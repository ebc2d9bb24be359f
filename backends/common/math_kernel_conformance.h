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
// Inputs start on the host; outputs are copied back for checking.
#ifndef TANDEM_BACKENDS_COMMON_MATH_KERNEL_CONFORMANCE_H_
#define TANDEM_BACKENDS_COMMON_MATH_KERNEL_CONFORMANCE_H_

#include <string>
#include <vector>

#include "framework/place/place.h"
#include "gtest/gtest.h"

namespace tandem {

// The ops whose kernels math_kernels.h provides.
const std::vector<std::string>& MathKernelOps();

class MathKernelConformance : public ::testing::TestWithParam<Place> {};

// "cpu", "sim_0": a test-name-safe spelling of the place.
std::string PlaceTestName(const ::testing::TestParamInfo<Place>& info);

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_MATH_KERNEL_CONFORMANCE_H_
