// Conformance tests of the kernels of nn_kernels.h, loss_kernels.h,
// optimizer_kernels.h, array_kernels.h and random_kernels.h through
// RunOpEager: hand-computed values, edge cases (0-d, empty, padding rows,
// duplicate sparse rows across threads, clamped slices), in-place updates,
// host-memory arguments and the exact error messages of bad input.
// Written once; each backend's test runs them on its places:
//
//   // backends/sim/sim_kernels_test.cc, linking :kernel_conformance
//   INSTANTIATE_TEST_SUITE_P(Sim, KernelConformance,
//                            ::testing::Values(SimPlace(0)), PlaceTestName);
//
// (tests/conformance checks every kernel against float64 references; these
// tests cover what a reference comparison cannot.)
#ifndef TANDEM_BACKENDS_COMMON_KERNEL_CONFORMANCE_H_
#define TANDEM_BACKENDS_COMMON_KERNEL_CONFORMANCE_H_

#include <string>
#include <vector>

#include "framework/place/place.h"
#include "gtest/gtest.h"

namespace tandem {

// The ops whose kernels the headers above provide.
const std::vector<std::string>& KernelConformanceOps();

class KernelConformance : public ::testing::TestWithParam<Place> {};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_KERNEL_CONFORMANCE_H_
