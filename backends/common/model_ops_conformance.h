// Conformance tests of the kernels that models are built from
// (elementwise_sub/mul/div, relu/sigmoid/tanh, reduce_sum/mean, mul, fc,
// softmax, softmax_with_cross_entropy, accuracy; math_kernels.h,
// nn_kernels.h, loss_kernels.h, metric_kernels.h) through RunOpEager:
// hand-computed values, numerical stability, ignored labels, unbound
// gradient outputs and the exact error messages of bad input. Written
// once; each backend's test runs them on its places:
//
//   // backends/sim/sim_kernels_test.cc, linking :model_ops_conformance
//   INSTANTIATE_TEST_SUITE_P(Sim, ModelOpsConformance,
//                            ::testing::Values(SimPlace(0)), PlaceTestName);
//
// (tests/conformance checks every kernel against float64 references; these
// tests cover what a reference comparison cannot.)
#ifndef TANDEM_BACKENDS_COMMON_MODEL_OPS_CONFORMANCE_H_
#define TANDEM_BACKENDS_COMMON_MODEL_OPS_CONFORMANCE_H_

#include <string>
#include <vector>

#include "framework/place/place.h"
#include "gtest/gtest.h"

namespace tandem {

// The ops whose kernels these tests cover.
const std::vector<std::string>& ModelOps();

class ModelOpsConformance : public ::testing::TestWithParam<Place> {};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_MODEL_OPS_CONFORMANCE_H_
