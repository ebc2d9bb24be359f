// Conformance tests of the layout and layer kernels (reshape, transpose,
// concat, split, dropout, conv2d, pool2d, layer_norm and their gradients;
// layout_kernels.h, nn_layer_kernels.h and a backend's own kernels for
// them) through RunOpEager: hand-computed values, edge cases and the exact
// error messages of bad input. Written once; each backend's test runs them
// on its places:
//
//   // backends/sim/sim_kernels_test.cc, linking :layer_ops_conformance
//   INSTANTIATE_TEST_SUITE_P(Sim, LayerOpsConformance,
//                            ::testing::Values(SimPlace(0)), PlaceTestName);
//
// (tests/conformance checks every kernel against float64 references; these
// tests cover what a reference comparison cannot.)
#ifndef TANDEM_BACKENDS_COMMON_LAYER_OPS_CONFORMANCE_H_
#define TANDEM_BACKENDS_COMMON_LAYER_OPS_CONFORMANCE_H_

#include <string>
#include <vector>

#include "framework/place/place.h"
#include "gtest/gtest.h"

namespace tandem {

// The ops whose kernels these tests cover.
const std::vector<std::string>& LayerOps();

class LayerOpsConformance : public ::testing::TestWithParam<Place> {};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_LAYER_OPS_CONFORMANCE_H_
