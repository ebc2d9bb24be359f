// The cpu kernels: registered when //backends/cpu is linked, and conformant
// (backends/common/math_kernel_conformance.h, kernel_conformance.h) on the
// host.
#include "backends/common/kernel_conformance.h"
#include "backends/common/layer_ops_conformance.h"
#include "backends/common/math_kernel_conformance.h"
#include "backends/common/model_ops_conformance.h"
#include "framework/place/place.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

INSTANTIATE_TEST_SUITE_P(Cpu, MathKernelConformance, ::testing::Values(CPUPlace()), PlaceTestName);
INSTANTIATE_TEST_SUITE_P(Cpu, KernelConformance, ::testing::Values(CPUPlace()), PlaceTestName);
INSTANTIATE_TEST_SUITE_P(Cpu, ModelOpsConformance, ::testing::Values(CPUPlace()), PlaceTestName);
INSTANTIATE_TEST_SUITE_P(Cpu, LayerOpsConformance, ::testing::Values(CPUPlace()), PlaceTestName);

}  // namespace
}  // namespace tandem
